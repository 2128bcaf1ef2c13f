import { CfnIPSet, CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { findRoute } from '../functions/routes.js';
import type { ServiceSettings } from './settings.js';

export interface EdgeWafProps {
  resourcePrefix: string;
  /** The API Gateway stage the web ACL guards. */
  stageArn: string;
  /** The gateways' events route, as its path starts (the stage name may come before it). */
  gatewayEventsPath: string;
  /** Requests to the events route one source address may make in a minute before WAF blocks it. */
  gatewayEventsPerSourcePerMinute: number;
  /**
   * The providers' published webhook source addresses (CIDR, IPv4): when given, the events route
   * answers nobody else at the edge. Empty: any address, limited per address.
   */
  gatewayEventSourceCidrs: readonly string[];
}

/**
 * The edge of POST /api/v1/gateways/{gateway}/events (issue 36): the route's stage throttle is spent
 * by anyone before a function runs, so a web ACL on the stage limits each source address on it, and,
 * where the providers' addresses are configured, refuses every other address there. The service
 * itself still spends a gateway's budget on verified events only (lib/payments/gateway-events.ts).
 */
export class EdgeWaf extends Construct {
  readonly webAcl: CfnWebACL;

  constructor(scope: Construct, id: string, props: EdgeWafProps) {
    super(scope, id);
    const onEventsRoute: CfnWebACL.StatementProperty = {
      byteMatchStatement: {
        fieldToMatch: { uriPath: {} },
        // On execute-api the path starts with the stage name; on a custom domain it does not.
        positionalConstraint: 'CONTAINS',
        searchString: props.gatewayEventsPath,
        textTransformations: [{ priority: 0, type: 'NONE' }],
      },
    };
    const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const rules: CfnWebACL.RuleProperty[] = [];
    if (props.gatewayEventSourceCidrs.length > 0) {
      const sources = new CfnIPSet(this, 'GatewayEventSources', {
        name: `${props.resourcePrefix}-gateway-event-sources`,
        scope: 'REGIONAL',
        ipAddressVersion: 'IPV4',
        addresses: [...props.gatewayEventSourceCidrs],
      });
      rules.push({
        name: 'gateway-events-from-providers-only',
        priority: 0,
        action: { block: {} },
        statement: {
          andStatement: {
            statements: [
              onEventsRoute,
              { notStatement: { statement: { ipSetReferenceStatement: { arn: sources.attrArn } } } },
            ],
          },
        },
        visibilityConfig: visibility(`${props.resourcePrefix}-gateway-events-foreign-source`),
      });
    }
    rules.push({
      name: 'gateway-events-per-source',
      priority: 1,
      action: { block: {} },
      statement: {
        rateBasedStatement: {
          aggregateKeyType: 'IP',
          evaluationWindowSec: 60,
          limit: props.gatewayEventsPerSourcePerMinute,
          scopeDownStatement: onEventsRoute,
        },
      },
      visibilityConfig: visibility(`${props.resourcePrefix}-gateway-events-per-source`),
    });
    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      name: `${props.resourcePrefix}-edge`,
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      rules,
      visibilityConfig: visibility(`${props.resourcePrefix}-edge`),
    });
    new CfnWebACLAssociation(this, 'StageAssociation', {
      resourceArn: props.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
  }
}

/** The web ACL's settings from the stage's (infra/settings.ts), its stage ARN apart. */
export const edgeWafSettings = (settings: ServiceSettings): Omit<EdgeWafProps, 'stageArn'> => ({
  resourcePrefix: settings.resourcePrefix,
  // `/api/v1/gateways/`: the path up to its first parameter.
  gatewayEventsPath: findRoute('gateway-events').path.split('{')[0]!,
  gatewayEventsPerSourcePerMinute: settings.gatewayEventsPerSourcePerMinute,
  gatewayEventSourceCidrs: settings.gatewayEventSourceCidrs,
});
