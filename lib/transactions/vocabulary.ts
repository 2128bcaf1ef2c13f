/**
 * The transactions feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../db/audit.js' {
  interface AuditKinds {
    'transaction.store': true;
  }
}
