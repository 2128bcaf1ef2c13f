/**
 * The crypto module's own failures. It knows nothing of HTTP, so the same code can run in a Lambda, a
 * script or a device SDK; lib/http/error-envelope.ts is where these become responses.
 */
export abstract class CryptoError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Every refused decryption carries this one message, whatever went wrong, so that nothing a caller
 * sees tells a bad token from a bad key or a tampered envelope. `reason` is for the audit log only.
 */
export class DecryptionError extends CryptoError {
  /** Node-style error code, the same in every refusal. */
  readonly code = 'DECRYPTION_ERROR';
  readonly reason: string;
  constructor(reason: string) {
    super('Failed to decrypt receipt: the access token, private key or envelope is not valid');
    this.reason = reason;
  }
}

/** A public key outside the allow-list. `field` names where the caller sent it. */
export class InvalidPublicKeyError extends CryptoError {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} is not an acceptable public key`);
  }
}

export class KeyGenerationError extends CryptoError {
  constructor(options?: ErrorOptions) {
    super('Failed to generate key pair', options);
  }
}

/**
 * The service holding a key (KMS) cannot be reached or cannot use the key: an outage to retry, never
 * a verdict on the envelope, so opening lets it through instead of folding it into DecryptionError.
 * `details` names the operation and the error class, never the cause's message.
 */
export class KeyUnavailableError extends CryptoError {
  constructor(
    message: string,
    readonly details: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A paging cursor that does not open (lib/crypto/cursor.ts): altered, forged, or made for another
 * list, resource or client. One message for all, so a caller learns nothing of which check failed.
 */
export class CursorRefusedError extends CryptoError {
  static readonly problem =
    'it was not returned by this endpoint for this resource and caller, or it was altered';
  constructor() {
    super(`The cursor is not valid: ${CursorRefusedError.problem}`);
  }
}
