/**
 * The SDK as the console's page offers it in the browser's console (the global ReceiptSdk): both of
 * its entry points, the core and `@receipt-service/sdk/pdf`.
 */
export * from '@receipt-service/sdk';
export * from '@receipt-service/sdk/pdf';
