import {
  constants,
  createCipheriv,
  createDecipheriv,
  createECDH,
  createHash,
  createPublicKey,
  createSecretKey,
  diffieHellman,
  generateKeyPairSync,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { FlattenedEncrypt, flattenedDecrypt, importPKCS8, importSPKI } from 'jose';
import {
  openEnvelope,
  sealEnvelope,
  toFlattenedJwe,
  type BoundFields,
  type Recipient,
} from '../lib/crypto/envelope.js';
import { benchReceipt } from './lib/receipt.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { median, rotated, round } from './lib/stats.js';

/**
 * Envelope seal/open against two references doing the same job on the same ~2 KB receipt with
 * pre-parsed keys: the floor (bare node:crypto, no header, no commitment) and jose's flattened JWE.
 * P-256 recipients (ECDH-ES+A256KW) are measured against RSA-OAEP-256 and against jose doing the
 * same ECDH-ES+A256KW job.
 * All implementations run in the same rounds, in rotating order, and every ratio is taken within a
 * round before the median is taken, so machine noise (other tenants, turbo) cancels out as far as it can.
 */

export interface CryptoOptions {
  rounds: number;
  /** Each round gives every candidate this many slices, interleaved, so they share the same noise. */
  slicesPerRound: number;
  sliceMs: number;
}

type Operation = 'seal' | 'open';

interface Candidate {
  name: string;
  operation: Operation;
  /** Returns something derived from the output so that the work cannot be optimised away. */
  run: () => number | Promise<number>;
  async: boolean;
}

interface CandidateSummary {
  operation: Operation;
  /** Median over rounds of wall-clock operations per second. */
  opsPerSecondMedian: number;
  microsPerOpMedian: number;
  /** Median over rounds of process CPU time per operation. */
  cpuMicrosPerOpMedian: number;
  opsPerSecondPerRound: number[];
}

interface RatioSummary {
  /** Median of the per-round ratios of wall-clock throughput: the figure the targets are judged on. */
  median: number;
  perRound: number[];
  /** The same ratio from CPU time per operation: less sensitive to other tenants on the machine. */
  cpuMedian: number;
  meaning: string;
}

export interface CryptoResult {
  receiptBytes: number;
  options: CryptoOptions;
  candidates: Record<string, CandidateSummary>;
  ratios: Record<string, RatioSummary>;
  targets: TargetCheck[];
}

const OAEP = { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' } as const;

// ------------------------------------------------------------------------------------------------
// The floor: what any implementation must at least do. One random draw for CEK and IV (as the
// envelope does), and the outputs spelt as base64 strings, because every candidate produces a
// serialisable result and the envelope's wire form is base64. Keys reach node:crypto as KeyObjects,
// its fast path (a Buffer key costs each cipher ~13 µs more on Node 24), as the envelope does.

interface FloorSealed {
  encryptedKey: string;
  iv: string;
  ciphertext: string;
  tag: string;
}

/** Both floors' content encryption: one draw for CEK and IV, AES-256-GCM of the receipt. */
function floorGcmSeal(plaintext: Buffer): { cek: Buffer; iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const random = randomBytes(44);
  const cek = random.subarray(0, 32);
  const iv = random.subarray(32);
  const cipher = createCipheriv('aes-256-gcm', createSecretKey(cek), iv, { authTagLength: 16 });
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { cek, iv, ciphertext, tag: cipher.getAuthTag() };
}

function floorSeal(plaintext: Buffer, publicKey: KeyObject): FloorSealed {
  const { cek, iv, ciphertext, tag } = floorGcmSeal(plaintext);
  const encryptedKey = publicEncrypt({ key: publicKey, ...OAEP }, cek);
  return {
    encryptedKey: encryptedKey.toString('base64'),
    iv: iv.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: tag.toString('base64'),
  };
}

function floorOpen(sealed: FloorSealed, privateKey: KeyObject): Buffer {
  const cek = privateDecrypt({ key: privateKey, ...OAEP }, Buffer.from(sealed.encryptedKey, 'base64'));
  const decipher = createDecipheriv('aes-256-gcm', createSecretKey(cek), Buffer.from(sealed.iv, 'base64'), {
    authTagLength: 16,
  });
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]);
}

// The P-256 floor: ECDH-ES+A256KW (RFC 7518 §4.6) in bare node:crypto. Seal: a fresh ephemeral key,
// ECDH with the recipient's point (taken once from its key, as a caller holding a parsed key would),
// the Concat KDF (one SHA-256 block: counter, Z, the constant OtherInfo), AES-KW of the CEK, AES-GCM of
// the receipt, base64 outputs and the ephemeral point as x/y. Open: the ephemeral point imported from
// its wire form (createPublicKey checks it is on the curve: without that, an invalid-curve point
// leaks the private key), ECDH, KDF, AES-KW unwrap, AES-GCM. No header, no commitment, no checks of
// key policy: what any implementation of the algorithm must do.

const lengthPrefixed = (bytes: Buffer): Buffer => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
};
const P256_OTHER_INFO = Buffer.concat([
  lengthPrefixed(Buffer.from('ECDH-ES+A256KW', 'ascii')),
  lengthPrefixed(Buffer.alloc(0)),
  lengthPrefixed(Buffer.alloc(0)),
  Buffer.from([0, 0, 1, 0]),
]);
const KDF_ROUND_ONE = Buffer.from([0, 0, 0, 1]);
const AES_KW_IV = Buffer.from('A6A6A6A6A6A6A6A6', 'hex');
const p256Kek = (shared: Buffer): Buffer =>
  createHash('sha256').update(KDF_ROUND_ONE).update(shared).update(P256_OTHER_INFO).digest();

interface FloorP256Sealed extends FloorSealed {
  epk: { x: string; y: string };
}

function floorSealP256(plaintext: Buffer, recipientPoint: Buffer): FloorP256Sealed {
  const { cek, iv, ciphertext, tag } = floorGcmSeal(plaintext);
  const ephemeral = createECDH('prime256v1');
  const epk = ephemeral.generateKeys();
  const kek = createSecretKey(p256Kek(ephemeral.computeSecret(recipientPoint)));
  const wrap = createCipheriv('id-aes256-wrap', kek, AES_KW_IV);
  const encryptedKey = Buffer.concat([wrap.update(cek), wrap.final()]);
  return {
    encryptedKey: encryptedKey.toString('base64'),
    iv: iv.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: tag.toString('base64'),
    epk: { x: epk.subarray(1, 33).toString('base64url'), y: epk.subarray(33).toString('base64url') },
  };
}

function floorOpenP256(sealed: FloorP256Sealed, privateKey: KeyObject): Buffer {
  const epk = createPublicKey({ key: { kty: 'EC', crv: 'P-256', ...sealed.epk }, format: 'jwk' });
  const kek = createSecretKey(p256Kek(diffieHellman({ privateKey, publicKey: epk })));
  const unwrap = createDecipheriv('id-aes256-wrap', kek, AES_KW_IV);
  const cek = Buffer.concat([unwrap.update(Buffer.from(sealed.encryptedKey, 'base64')), unwrap.final()]);
  const decipher = createDecipheriv('aes-256-gcm', createSecretKey(cek), Buffer.from(sealed.iv, 'base64'), {
    authTagLength: 16,
  });
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]);
}

interface Slice {
  operations: number;
  wallMs: number;
  cpuMs: number;
}

/**
 * One short slice of one candidate. CPU time is process-wide (user + system), so it includes the
 * libuv pool threads where WebCrypto (jose) does its RSA work; it is the cross-check that does not
 * count the time this process spent descheduled by other tenants.
 */
async function slice(candidate: Candidate, sliceMs: number): Promise<Slice> {
  let operations = 0;
  let sink = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  let elapsed = 0;
  if (candidate.async) {
    while (elapsed < sliceMs) {
      sink += await candidate.run();
      operations++;
      elapsed = performance.now() - start;
    }
  } else {
    while (elapsed < sliceMs) {
      sink += candidate.run() as number;
      operations++;
      elapsed = performance.now() - start;
    }
  }
  const used = process.cpuUsage(cpu);
  if (sink < 0) console.log('unreachable', sink);
  return { operations, wallMs: elapsed, cpuMs: (used.user + used.system) / 1000 };
}

export async function runCryptoBench(options: CryptoOptions): Promise<CryptoResult> {
  const receipt = benchReceipt();
  const plaintext = Buffer.from(JSON.stringify(receipt), 'utf8');
  const bound: BoundFields = {
    version: receipt.version,
    receiptId: receipt.receiptId,
    merchantId: receipt.merchant.merchantId,
    transactionId: receipt.transaction.transactionId,
  };
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicExponent: 0x10001,
  });
  const recipient: Recipient = { keyId: 'bench-key', publicKey };
  // jose v6 works on WebCrypto CryptoKeys; importing once up front is what "pre-imported" means.
  const josePublic = await importSPKI(
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    'RSA-OAEP-256',
  );
  const josePrivate = await importPKCS8(
    privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    'RSA-OAEP-256',
  );
  // The same header fields as the envelope binds, so the AAD jose authenticates is the same size.
  const joseHeader = { alg: 'RSA-OAEP-256', enc: 'A256GCM', ...bound };
  const joseSeal = () => new FlattenedEncrypt(plaintext).setProtectedHeader(joseHeader).encrypt(josePublic);

  // A device's P-256 key: the envelope's ECDH-ES+A256KW, and jose's with the same header fields.
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ecRecipient: Recipient = { keyId: 'bench-device-key', publicKey: ec.publicKey };
  const joseEcPublic = await importSPKI(
    ec.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    'ECDH-ES+A256KW',
  );
  const joseEcPrivate = await importPKCS8(
    ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    'ECDH-ES+A256KW',
  );
  const ecJwk = ec.publicKey.export({ format: 'jwk' });
  const ecPoint = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(ecJwk.x ?? '', 'base64url'),
    Buffer.from(ecJwk.y ?? '', 'base64url'),
  ]);
  const joseEcHeader = { alg: 'ECDH-ES+A256KW', enc: 'A256GCM', ...bound };
  const joseEcSeal = () =>
    new FlattenedEncrypt(plaintext).setProtectedHeader(joseEcHeader).encrypt(joseEcPublic);

  // Fixed inputs for the open candidates, and a correctness check of every pair before any timing.
  const envelope = sealEnvelope(plaintext, bound, recipient);
  const floorSealed = floorSeal(plaintext, publicKey);
  const joseSealed = await joseSeal();
  const ecEnvelope = sealEnvelope(plaintext, bound, ecRecipient);
  const joseEcSealed = await joseEcSeal();
  const floorP256Sealed = floorSealP256(plaintext, ecPoint);
  const checks: [string, Buffer | Uint8Array][] = [
    ['envelope', openEnvelope(envelope, privateKey)],
    ['floor', floorOpen(floorSealed, privateKey)],
    ['jose', (await flattenedDecrypt(joseSealed, josePrivate)).plaintext],
    ['jose reading an envelope', (await flattenedDecrypt(toFlattenedJwe(envelope), josePrivate)).plaintext],
    ['P-256 envelope', openEnvelope(ecEnvelope, ec.privateKey)],
    ['P-256 floor', floorOpenP256(floorP256Sealed, ec.privateKey)],
    ['jose P-256', (await flattenedDecrypt(joseEcSealed, joseEcPrivate)).plaintext],
    [
      'jose reading a P-256 envelope',
      (await flattenedDecrypt(toFlattenedJwe(ecEnvelope), joseEcPrivate)).plaintext,
    ],
  ];
  for (const [name, opened] of checks) {
    if (!Buffer.from(opened).equals(plaintext)) throw new Error(`crypto bench: ${name} did not round-trip`);
  }

  const cek = randomBytes(32);
  const iv = randomBytes(12);
  const wrapped = publicEncrypt({ key: publicKey, ...OAEP }, cek);
  const candidates: Candidate[] = [
    {
      name: 'seal: envelope',
      operation: 'seal',
      async: false,
      run: () => sealEnvelope(plaintext, bound, recipient).ciphertext.length,
    },
    {
      name: 'seal: floor',
      operation: 'seal',
      async: false,
      run: () => floorSeal(plaintext, publicKey).ciphertext.length,
    },
    {
      name: 'seal: jose',
      operation: 'seal',
      async: true,
      run: async () => (await joseSeal()).ciphertext.length,
    },
    // Components of the floor, to say what dominates it.
    {
      name: 'seal part: RSA-OAEP-256 wrap',
      operation: 'seal',
      async: false,
      run: () => publicEncrypt({ key: publicKey, ...OAEP }, cek).length,
    },
    {
      name: 'seal part: AES-256-GCM 2 KB',
      operation: 'seal',
      async: false,
      run: () => {
        const cipher = createCipheriv('aes-256-gcm', createSecretKey(cek), iv, { authTagLength: 16 });
        return cipher.update(plaintext).length + cipher.final().length + cipher.getAuthTag().length;
      },
    },
    {
      name: 'open: envelope',
      operation: 'open',
      async: false,
      run: () => openEnvelope(envelope, privateKey).length,
    },
    {
      name: 'open: floor',
      operation: 'open',
      async: false,
      run: () => floorOpen(floorSealed, privateKey).length,
    },
    {
      name: 'open: jose',
      operation: 'open',
      async: true,
      run: async () => (await flattenedDecrypt(joseSealed, josePrivate)).plaintext.length,
    },
    {
      name: 'open part: RSA-OAEP-256 unwrap',
      operation: 'open',
      async: false,
      run: () => privateDecrypt({ key: privateKey, ...OAEP }, wrapped).length,
    },
    {
      name: 'seal: floor P-256',
      operation: 'seal',
      async: false,
      run: () => floorSealP256(plaintext, ecPoint).ciphertext.length,
    },
    {
      name: 'seal: envelope P-256',
      operation: 'seal',
      async: false,
      run: () => sealEnvelope(plaintext, bound, ecRecipient).ciphertext.length,
    },
    {
      name: 'seal: jose P-256',
      operation: 'seal',
      async: true,
      run: async () => (await joseEcSeal()).ciphertext.length,
    },
    {
      name: 'open: floor P-256',
      operation: 'open',
      async: false,
      run: () => floorOpenP256(floorP256Sealed, ec.privateKey).length,
    },
    {
      name: 'open: envelope P-256',
      operation: 'open',
      async: false,
      run: () => openEnvelope(ecEnvelope, ec.privateKey).length,
    },
    {
      name: 'open: jose P-256',
      operation: 'open',
      async: true,
      run: async () => (await flattenedDecrypt(joseEcSealed, joseEcPrivate)).plaintext.length,
    },
  ];

  // Warm-up: JIT, OpenSSL's lazily built Montgomery tables, jose's key caches.
  for (const candidate of candidates) await slice(candidate, 150);

  const wall = new Map<string, number[]>(candidates.map((candidate) => [candidate.name, []]));
  const cpu = new Map<string, number[]>(candidates.map((candidate) => [candidate.name, []]));
  for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
    const totals = new Map<string, Slice>(
      candidates.map((candidate) => [candidate.name, { operations: 0, wallMs: 0, cpuMs: 0 }]),
    );
    for (let sliceIndex = 0; sliceIndex < options.slicesPerRound; sliceIndex++) {
      for (const candidate of rotated(candidates, roundIndex * options.slicesPerRound + sliceIndex)) {
        const measured = await slice(candidate, options.sliceMs);
        const total = totals.get(candidate.name);
        if (!total) continue;
        total.operations += measured.operations;
        total.wallMs += measured.wallMs;
        total.cpuMs += measured.cpuMs;
      }
    }
    for (const [name, total] of totals) {
      wall.get(name)?.push((total.operations / total.wallMs) * 1000);
      cpu.get(name)?.push((total.cpuMs * 1000) / total.operations);
    }
  }
  const series = (map: Map<string, number[]>, name: string): number[] => map.get(name) ?? [];
  const perRoundRatio = (numerator: number[], denominator: number[]): number[] =>
    numerator.map((value, index) => value / (denominator[index] ?? Number.NaN));

  const ratios: Record<string, RatioSummary> = {};
  /** `faster` over `slower` as a ratio of throughputs (wall) and of CPU cost per operation, the other way up. */
  const addRatio = (key: string, faster: string, slower: string, meaning: string) => {
    const values = perRoundRatio(series(wall, faster), series(wall, slower));
    const cpuValues = perRoundRatio(series(cpu, slower), series(cpu, faster));
    ratios[key] = {
      median: round(median(values), 3),
      perRound: values.map((value) => round(value, 3)),
      cpuMedian: round(median(cpuValues), 3),
      meaning,
    };
  };
  // Each ratio is oriented the way its target is phrased.
  addRatio(
    'sealVsJose',
    'seal: envelope',
    'seal: jose',
    'jose seal time ÷ envelope seal time (× faster than jose)',
  );
  addRatio(
    'sealVsFloor',
    'seal: floor',
    'seal: envelope',
    'envelope seal time ÷ floor seal time (× the floor)',
  );
  addRatio(
    'openVsFloor',
    'open: floor',
    'open: envelope',
    'envelope open time ÷ floor open time (× the floor)',
  );
  addRatio(
    'openVsJose',
    'open: envelope',
    'open: jose',
    'jose open time ÷ envelope open time (× faster than jose)',
  );

  addRatio(
    'p256SealVsFloor',
    'seal: floor P-256',
    'seal: envelope P-256',
    'P-256 envelope seal time ÷ bare node:crypto ECDH-ES+A256KW seal time (× the floor)',
  );
  addRatio(
    'p256OpenVsFloor',
    'open: floor P-256',
    'open: envelope P-256',
    'P-256 envelope open time ÷ bare node:crypto ECDH-ES+A256KW open time (× the floor)',
  );
  addRatio(
    'p256SealVsRsa',
    'seal: envelope P-256',
    'seal: envelope',
    'RSA-OAEP-256 seal time ÷ P-256 seal time (× faster than RSA; < 1: slower)',
  );
  addRatio(
    'p256OpenVsRsa',
    'open: envelope P-256',
    'open: envelope',
    'RSA-OAEP-256 open time ÷ P-256 open time (× faster than RSA; < 1: slower)',
  );
  addRatio(
    'p256SealVsJose',
    'seal: envelope P-256',
    'seal: jose P-256',
    'jose ECDH-ES+A256KW seal time ÷ P-256 envelope seal time (× faster than jose)',
  );
  addRatio(
    'p256OpenVsJose',
    'open: envelope P-256',
    'open: jose P-256',
    'jose ECDH-ES+A256KW open time ÷ P-256 envelope open time (× faster than jose)',
  );

  const summary: Record<string, CandidateSummary> = {};
  for (const candidate of candidates) {
    const opsPerSecond = median(series(wall, candidate.name));
    summary[candidate.name] = {
      operation: candidate.operation,
      opsPerSecondMedian: round(opsPerSecond, 1),
      microsPerOpMedian: round(1e6 / opsPerSecond, 2),
      cpuMicrosPerOpMedian: round(median(series(cpu, candidate.name)), 2),
      opsPerSecondPerRound: series(wall, candidate.name).map((value) => round(value, 1)),
    };
  }

  printTable(
    `Crypto: ${plaintext.length}-byte receipt, RSA-2048 and P-256; ${options.rounds} rounds × ${options.slicesPerRound} interleaved ${options.sliceMs} ms slices per candidate; medians over rounds`,
    ['candidate', 'ops/s', 'µs/op (wall)', 'µs/op (CPU)'],
    candidates.map((candidate) => {
      const entry = summary[candidate.name];
      return [
        candidate.name,
        entry?.opsPerSecondMedian ?? Number.NaN,
        entry?.microsPerOpMedian ?? Number.NaN,
        entry?.cpuMicrosPerOpMedian ?? Number.NaN,
      ];
    }),
  );
  printTable(
    'Crypto ratios (median of per-round ratios; wall-clock range over rounds; CPU-time cross-check)',
    ['ratio', 'wall', 'wall range', 'CPU', 'meaning'],
    Object.entries(ratios).map(([key, ratio]) => [
      key,
      ratio.median,
      `${Math.min(...ratio.perRound)}–${Math.max(...ratio.perRound)}`,
      ratio.cpuMedian,
      ratio.meaning,
    ]),
  );

  const sealVsJose = ratios.sealVsJose?.median ?? Number.NaN;
  const sealVsFloor = ratios.sealVsFloor?.median ?? Number.NaN;
  const openVsFloor = ratios.openVsFloor?.median ?? Number.NaN;
  const micros = (name: string) => summary[name]?.microsPerOpMedian ?? Number.NaN;
  const targets: TargetCheck[] = [
    {
      section: 'crypto',
      target: 'seal ≥ 2× jose throughput',
      measured: `${sealVsJose.toFixed(2)}× (${micros('seal: envelope')} vs ${micros('seal: jose')} µs/op)`,
      met: sealVsJose >= 2,
    },
    {
      section: 'crypto',
      target: 'seal within 1.5× of the floor',
      measured: `${sealVsFloor.toFixed(2)}× (${micros('seal: envelope')} vs ${micros('seal: floor')} µs/op)`,
      met: sealVsFloor <= 1.5,
    },
    {
      section: 'crypto',
      target: 'open within 1.2× of the floor',
      measured: `${openVsFloor.toFixed(2)}× (${micros('open: envelope')} vs ${micros('open: floor')} µs/op)`,
      met: openVsFloor <= 1.2,
    },
    ...(['seal', 'open'] as const).map((operation): TargetCheck => {
      const ratio =
        ratios[operation === 'seal' ? 'p256SealVsFloor' : 'p256OpenVsFloor']?.median ?? Number.NaN;
      return {
        section: 'crypto',
        target: `P-256 ${operation} within 1.2× of bare node:crypto ECDH-ES+A256KW`,
        measured: `${ratio.toFixed(2)}× (${micros(`${operation}: envelope P-256`)} vs ${micros(`${operation}: floor P-256`)} µs/op)`,
        met: ratio <= 1.2,
      };
    }),
  ];
  return {
    receiptBytes: plaintext.length,
    options,
    candidates: summary,
    ratios,
    targets,
  };
}
