import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { SSMClient } from '@aws-sdk/client-ssm';
import { ApiGatewayEdgeKeyStore, loadUsagePlanIds, type EdgeKeyStore } from './admin/api-gateway-keys.js';

/** The edge half of key management on a deployed stage: API Gateway keys and usage-plan membership. */
export async function awsEdgeKeyStore(region: string, stage: string): Promise<EdgeKeyStore> {
  const usagePlans = await loadUsagePlanIds({ stage, ssm: new SSMClient({ region }) });
  return new ApiGatewayEdgeKeyStore(new APIGatewayClient({ region }), usagePlans);
}
