/** Every authenticated call reads its key and counts against its limits (a write: the count comes back with it); every call may write audit. */
export const platformTables = { apiKeys: 'read', rateLimits: 'write', audit: 'write' } as const;

/** Said of every response carrying a key, token or receipt. */
export const noStore = 'Sent with `Cache-Control: no-store`, like every response.';
