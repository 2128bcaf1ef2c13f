import { randomUUID, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { grantAccess } from '../../lib/access/tokens.js';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { openEnvelope } from '../../lib/crypto/envelope.js';
import { DecryptionError } from '../../lib/crypto/errors.js';
import { decodePrivateKey } from '../../lib/crypto/keys.js';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import type { EnvelopeInput } from '../../lib/kernel/envelope-input.js';
import { InvalidRequestError, NotFoundError } from '../../lib/kernel/errors.js';
import { AlreadyRegisteredError, KeyNotFoundError } from '../../lib/onboarding/vocabulary.js';
import { GrantForbiddenError } from '../../lib/access/vocabulary.js';
import { generateKeyPairFor, registerUser } from '../../lib/onboarding/onboarding.js';
import { decryptForCaller } from '../../lib/receipts/decrypt.js';
import { getReceipt, listUserReceipts } from '../../lib/receipts/inbox.js';
import { eraseUser, rotateUserKey } from '../../lib/users/lifecycle.js';
import { newHashedPan } from '../support/fixtures.js';
import {
  importDeviceKey,
  registerCardholder,
  request,
  startUseCases,
  storeReceipt,
  type Cardholder,
  type UseCases,
} from './support.js';

/**
 * A cardholder's key over its life: registered once per card and per key, rotated to another key of
 * the same client, and erased with every receipt wrapped for it (crypto-shredding). Each test names
 * the rule it holds and looks at what the use cases answer and what can be read or opened afterwards.
 */
describe('key lifecycle: register, rotate, erase', () => {
  let useCases: UseCases;
  let merchant: Caller;
  let issuer: Caller;
  let otherIssuer: Caller;

  beforeAll(async () => {
    useCases = await startUseCases();
    [merchant, issuer, otherIssuer] = await Promise.all([
      useCases.caller(['merchant']),
      useCases.caller(['issuer']),
      useCases.caller(['issuer']),
    ]);
  });

  afterAll(() => useCases?.close());

  const register = (caller: Caller, input: { hashedPan: string; publicKey: string; keyId: string }) =>
    registerUser(useCases.deps, caller, input, request().requestId);
  const rotate = (user: { userId: string }, keyId: string, caller: Caller = issuer) =>
    rotateUserKey(useCases.deps, { userId: user.userId, keyId, caller, ...request() });
  const erase = (user: { userId: string }, caller: Caller = issuer, remainingMs = () => 60_000) =>
    eraseUser(useCases.deps, { userId: user.userId, caller, remainingMs, ...request() });
  const grant = (user: { userId: string }, keyId: string) =>
    grantAccess(useCases.deps, { userId: user.userId, keyId, caller: issuer, ...request() });
  const decrypt = (envelope: ReceiptEnvelope, tokenId: string, privateKey: KeyObject) =>
    decryptForCaller(useCases.deps, {
      envelope: envelope as unknown as EnvelopeInput,
      accessTokenId: tokenId,
      privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
      caller: issuer,
      action: 'receipt.decrypt',
      ...request(),
    });
  const opens = (envelope: ReceiptEnvelope, privateKey: KeyObject) =>
    (JSON.parse(openEnvelope(envelope, privateKey).toString('utf8')) as { receiptId: string }).receiptId;
  const refusal = <T>(promise: Promise<T>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error,
    );

  describe('register', () => {
    it('binds a key the service generated to a new user: receipts for the card are wrapped for it from then on', async () => {
      const hashedPan = newHashedPan();
      const before = await storeReceipt(useCases.deps, merchant, hashedPan);
      const generated = await generateKeyPairFor(useCases.deps, issuer, request().requestId);

      const { user } = await register(issuer, { hashedPan, ...generated });

      expect(user).toMatchObject({ keyId: generated.keyId, clientId: issuer.clientId, status: 'active' });
      const after = await storeReceipt(useCases.deps, merchant, hashedPan);
      expect(after.recipientUserId).toBe(user.userId);
      expect(after.envelope).toMatchObject({ isEscrowed: false, keyId: generated.keyId });
      expect(opens(after.envelope, decodePrivateKey(generated.privateKey))).toBe(after.receipt.receiptId);
      // Registering hands nothing over: what was escrowed before waits for a claim.
      expect(before.envelope.isEscrowed).toBe(true);
      await expect(getReceipt(useCases.deps, before.receipt.receiptId, issuer)).rejects.toBeInstanceOf(
        NotFoundError,
      );
    });

    it('refuses a card already registered, by this client or another, naming hashedPan; the first user keeps it', async () => {
      const first = await registerCardholder(useCases.deps, issuer);
      for (const caller of [issuer, otherIssuer]) {
        const key = await importDeviceKey(useCases.deps, caller);
        const refused = await refusal(register(caller, { hashedPan: first.hashedPan, ...key }));
        expect(refused).toBeInstanceOf(AlreadyRegisteredError);
        expect((refused as AlreadyRegisteredError).details).toEqual({ field: 'hashedPan' });
        // The refused key is still free for another card.
        await expect(register(caller, { hashedPan: newHashedPan(), ...key })).resolves.toBeDefined();
      }
      expect((await storeReceipt(useCases.deps, merchant, first.hashedPan)).recipientUserId).toBe(
        first.userId,
      );
    });

    it('refuses a key already bound to a user, naming keyId', async () => {
      const first = await registerCardholder(useCases.deps, issuer);
      const key = await useCases.deps.repos.keyPairs.get(first.keyId);

      const refused = await refusal(
        register(issuer, { hashedPan: newHashedPan(), keyId: first.keyId, publicKey: key!.publicKey }),
      );

      expect(refused).toBeInstanceOf(AlreadyRegisteredError);
      expect((refused as AlreadyRegisteredError).details).toEqual({ field: 'keyId' });
    });

    it("refuses another client's key exactly like an unknown one", async () => {
      const theirs = await importDeviceKey(useCases.deps, otherIssuer);

      const foreign = await refusal(register(issuer, { hashedPan: newHashedPan(), ...theirs }));
      const unknown = await refusal(
        register(issuer, { hashedPan: newHashedPan(), publicKey: theirs.publicKey, keyId: randomUUID() }),
      );

      expect(foreign).toBeInstanceOf(KeyNotFoundError);
      expect(unknown).toBeInstanceOf(KeyNotFoundError);
      expect((foreign as Error).message).toBe((unknown as Error).message);
      // Its owner can still register with it.
      await expect(register(otherIssuer, { hashedPan: newHashedPan(), ...theirs })).resolves.toBeDefined();
    });

    it("refuses a publicKey that is not the keyId's, and binds nothing", async () => {
      const key = await importDeviceKey(useCases.deps, issuer);
      const other = await importDeviceKey(useCases.deps, issuer);
      const hashedPan = newHashedPan();

      const refused = await refusal(
        register(issuer, { hashedPan, keyId: key.keyId, publicKey: other.publicKey }),
      );

      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect((refused as InvalidRequestError).details).toMatchObject({ fields: [{ field: 'publicKey' }] });
      await expect(register(issuer, { hashedPan, ...key })).resolves.toBeDefined();
    });
  });

  describe('rotate', () => {
    it("binds the user to a new key: later receipts are wrapped for it and the old key's tokens stop working", async () => {
      const user = await registerCardholder(useCases.deps, issuer);
      const old = await storeReceipt(useCases.deps, merchant, user.hashedPan);
      const oldToken = await grant(user, user.keyId);
      const next = await importDeviceKey(useCases.deps, issuer);

      const rotation = await rotate(user, next.keyId);

      expect(rotation).toMatchObject({
        userId: user.userId,
        keyId: next.keyId,
        status: 'active',
        tokensRevoked: 1,
      });
      await expect(decrypt(old.envelope, oldToken.tokenId, user.privateKey)).rejects.toBeInstanceOf(
        DecryptionError,
      );
      await expect(grant(user, user.keyId)).rejects.toBeInstanceOf(GrantForbiddenError);

      const later = await storeReceipt(useCases.deps, merchant, user.hashedPan);
      expect(later.envelope.keyId).toBe(next.keyId);
      const token = await grant(user, next.keyId);
      await expect(decrypt(later.envelope, token.tokenId, next.privateKey)).resolves.toMatchObject({
        receiptId: later.receipt.receiptId,
      });
      expect(() => openEnvelope(later.envelope, user.privateKey)).toThrow();
      // The old token's slot is free again: the new key gets the whole allowance of live tokens.
      for (let granted = 1; granted < useCases.deps.config.maxActiveTokens; granted += 1)
        await expect(grant(user, next.keyId)).resolves.toMatchObject({ keyId: next.keyId });
      // A receipt already wrapped for the old key is left as it is: the old device still opens it.
      const kept = await getReceipt(useCases.deps, old.receipt.receiptId, issuer);
      expect(opens(kept.envelope, user.privateKey)).toBe(old.receipt.receiptId);
    });

    it("refuses a key already bound (the user's own old one included), another client's key, and another client's user; the key stays", async () => {
      const user = await registerCardholder(useCases.deps, issuer);
      const someoneElse = await registerCardholder(useCases.deps, issuer);
      const next = await importDeviceKey(useCases.deps, issuer);
      await rotate(user, next.keyId);
      const theirs = await importDeviceKey(useCases.deps, otherIssuer);
      const spare = await importDeviceKey(useCases.deps, issuer);

      const refusals = [
        await refusal(rotate(user, someoneElse.keyId)),
        await refusal(rotate(user, user.keyId)),
        await refusal(rotate(user, theirs.keyId)),
        await refusal(rotate(user, randomUUID())),
        await refusal(rotate(user, spare.keyId, otherIssuer)),
        await refusal(rotate({ userId: randomUUID() }, spare.keyId)),
      ];

      expect(refusals.map((error) => (error as Error).constructor)).toEqual([
        AlreadyRegisteredError,
        AlreadyRegisteredError,
        KeyNotFoundError,
        KeyNotFoundError,
        NotFoundError,
        NotFoundError,
      ]);
      expect((refusals[4] as Error).message).toBe((refusals[5] as Error).message);
      expect((await storeReceipt(useCases.deps, merchant, user.hashedPan)).envelope.keyId).toBe(next.keyId);
    });
  });

  describe('erase', () => {
    async function userWithReceipts(count: number): Promise<{ user: Cardholder; receiptIds: string[] }> {
      const user = await registerCardholder(useCases.deps, issuer);
      const receiptIds: string[] = [];
      for (let index = 0; index < count; index += 1)
        receiptIds.push((await storeReceipt(useCases.deps, merchant, user.hashedPan)).receipt.receiptId);
      return { user, receiptIds };
    }

    const readable = async (receiptId: string, caller: Caller) =>
      getReceipt(useCases.deps, receiptId, caller).then(
        () => true,
        (error: unknown) => {
          if (error instanceof NotFoundError) return false;
          throw error;
        },
      );

    it('deletes every receipt wrapped for the user, its tokens and key bindings; the card is free to register again', async () => {
      const { user, receiptIds } = await userWithReceipts(3);
      const token = await grant(user, user.keyId);
      const { envelope } = await getReceipt(useCases.deps, receiptIds[0]!, issuer);

      const erasure = await erase(user);

      expect(erasure).toMatchObject({
        userId: user.userId,
        status: 'erased',
        receiptsDeleted: 3,
        complete: true,
      });
      for (const receiptId of receiptIds) {
        expect(await readable(receiptId, issuer)).toBe(false);
        expect(await readable(receiptId, merchant)).toBe(false);
      }
      await expect(
        listUserReceipts(useCases.deps, {
          userId: user.userId,
          limit: 10,
          cursor: undefined,
          caller: issuer,
        }),
      ).rejects.toBeInstanceOf(NotFoundError);
      await expect(decrypt(envelope, token.tokenId, user.privateKey)).rejects.toBeInstanceOf(DecryptionError);
      expect(await useCases.deps.repos.accessTokens.find(token.tokenId)).toBeNull();
      await expect(grant(user, user.keyId)).rejects.toBeInstanceOf(GrantForbiddenError);
      // Nothing new is wrapped for the erased user: the card's next receipt is escrowed.
      expect((await storeReceipt(useCases.deps, merchant, user.hashedPan)).envelope.isEscrowed).toBe(true);
      // Its key is gone with it; the card can be registered with a new one.
      const key = await useCases.deps.repos.keyPairs.get(user.keyId);
      expect(key).toBeNull();
      await expect(registerCardholder(useCases.deps, issuer, user.hashedPan)).resolves.toBeDefined();
    });

    it('deletes the receipts of keys the user had before a rotation too', async () => {
      const { user, receiptIds } = await userWithReceipts(1);
      const next = await importDeviceKey(useCases.deps, issuer);
      await rotate(user, next.keyId);
      receiptIds.push((await storeReceipt(useCases.deps, merchant, user.hashedPan)).receipt.receiptId);

      expect(await erase(user)).toMatchObject({ receiptsDeleted: 2, complete: true });

      for (const receiptId of receiptIds) expect(await readable(receiptId, merchant)).toBe(false);
      expect(await useCases.deps.repos.keyPairs.get(user.keyId)).toBeNull();
      expect(await useCases.deps.repos.keyPairs.get(next.keyId)).toBeNull();
    });

    it('says when it was cut short by time, and the same client carries it on to the end; nobody else can', async () => {
      const { user, receiptIds } = await userWithReceipts(2);

      const cut = await erase(user, issuer, () => 0);
      expect(cut).toMatchObject({ status: 'erased', receiptsDeleted: 0, complete: false });
      // The user is gone at once: nothing is granted or wrapped for it while its receipts remain.
      await expect(grant(user, user.keyId)).rejects.toBeInstanceOf(GrantForbiddenError);
      expect(await readable(receiptIds[0]!, merchant)).toBe(true);

      await expect(erase(user, otherIssuer)).rejects.toBeInstanceOf(NotFoundError);
      const finished = await erase(user);
      expect(finished).toMatchObject({ receiptsDeleted: 2, complete: true, erasedAt: cut.erasedAt });
      for (const receiptId of receiptIds) expect(await readable(receiptId, merchant)).toBe(false);
      expect(await erase(user)).toMatchObject({ receiptsDeleted: 0, complete: true });
    });

    it("refuses another client's user exactly like an unknown one, and erases nothing", async () => {
      const { user, receiptIds } = await userWithReceipts(1);

      const foreign = await refusal(erase(user, otherIssuer));
      const unknown = await refusal(erase({ userId: randomUUID() }));

      expect(foreign).toBeInstanceOf(NotFoundError);
      expect((foreign as Error).message).toBe((unknown as Error).message);
      expect(await readable(receiptIds[0]!, issuer)).toBe(true);
      await expect(grant(user, user.keyId)).resolves.toMatchObject({ userId: user.userId });
    });
  });
});
