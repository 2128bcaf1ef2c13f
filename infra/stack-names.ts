/**
 * The stack names of one stage (infra/service-stacks.ts): the service stack keeps the name the single
 * stack had, so its outputs (ApiUrl, the usage plans) are where they were.
 */
export const stackNames = (stage: string) =>
  ({
    data: `ReceiptServiceData-${stage}`,
    service: `ReceiptService-${stage}`,
    monitoring: `ReceiptServiceMonitoring-${stage}`,
  }) as const;
