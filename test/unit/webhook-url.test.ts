import { describe, expect, it } from '@jest/globals';
import { createCoreDeps } from '../../lib/app/deps.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { systemClock } from '../../lib/kernel/clock.js';
import { loadConfig } from '../../lib/kernel/config.js';
import { createLogger } from '../../lib/kernel/log.js';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { tiers } from '../../lib/kernel/tiers.js';
import {
  checkWebhookUrl,
  webhookUrlGuardOf,
  type HostResolver,
  type WebhookUrlGuard,
} from '../../lib/webhooks/url-guard.js';
import { localWebhookUrlGuard } from '../../local/webhook-url-guard.js';

const names: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'inside.example.com': ['10.1.2.3'],
  'mixed.example.com': ['93.184.215.14', '192.168.1.20'],
  'metadata.example.com': ['169.254.169.254'],
  'mapped.example.com': ['::ffff:10.0.0.1'],
  'localhost.example.com': ['127.0.0.1', '::1'],
  'empty.example.com': [],
};
const resolve: HostResolver = async (hostname) => {
  const found = names[hostname];
  if (!found) throw new Error(`ENOTFOUND ${hostname}`);
  return found;
};
const deployed: WebhookUrlGuard = (url) => checkWebhookUrl(url, resolve);
const local: WebhookUrlGuard = localWebhookUrlGuard(resolve);

const reasonOf = async (url: string, guard = deployed): Promise<string> => {
  const check = await guard(url);
  if (check.ok) throw new Error(`${url} was accepted`);
  return check.reason;
};

describe('checkWebhookUrl', () => {
  it('accepts https to a host whose every address is public, and returns those addresses', async () => {
    const check = await deployed('https://hooks.example.com/receipts?x=1');
    expect(check).toEqual({
      ok: true,
      url: new URL('https://hooks.example.com/receipts?x=1'),
      addresses: names['hooks.example.com'],
    });
    expect((await deployed('https://93.184.215.14:8443/in')).ok).toBe(true);
  });

  it.each([
    ['https://169.254.169.254/latest/meta-data', 'link-local'],
    ['https://10.0.0.1/hook', 'private'],
    ['https://172.16.5.4/hook', 'private'],
    ['https://192.168.0.1/hook', 'private'],
    ['https://127.0.0.1/hook', 'loopback'],
    ['https://[::1]/hook', 'loopback'],
    ['https://100.64.0.1/hook', 'carrier-grade NAT'],
    ['https://0.0.0.0/hook', 'unspecified'],
    ['https://[::]/hook', 'unspecified'],
    ['https://224.0.0.1/hook', 'multicast'],
    ['https://255.255.255.255/hook', 'broadcast'],
    ['https://240.0.0.1/hook', 'reserved'],
    ['https://[fe80::1]/hook', 'link-local'],
    ['https://[fd00::1]/hook', 'unique-local'],
    ['https://[ff02::1]/hook', 'multicast'],
  ])('refuses %s as %s', async (url, range) => {
    expect(await reasonOf(url)).toContain(`a ${range} address`);
  });

  it('judges IPv4-mapped IPv6 addresses as the IPv4 address they carry', async () => {
    expect(await reasonOf('https://[::ffff:169.254.169.254]/')).toContain('link-local');
    expect(await reasonOf('https://[::ffff:a00:1]/')).toContain('private');
    expect(await reasonOf('https://[::ffff:127.0.0.1]/')).toContain('loopback');
    expect(await reasonOf('https://mapped.example.com/')).toContain('private');
    // Issue 20: the deprecated IPv4-compatible form (::a.b.c.d), which WHATWG URL spells ::a9fe:a9fe and
    // ipaddr.js calls unicast, was accepted before (these three expectations failed on that code).
    expect(await reasonOf('https://[::169.254.169.254]/')).toContain('link-local address');
    expect(await reasonOf('https://[::10.0.0.1]/')).toContain('private address');
    expect(await reasonOf('https://[::a9fe:a9fe]/latest/meta-data')).toContain('link-local');
    // ::1 and :: sit in the same /96 and keep their own names.
    expect(await reasonOf('https://[::1]/')).toContain('loopback');
    expect(await reasonOf('https://[::]/')).toContain('unspecified');
    // Prefixes that translate to IPv4 somewhere else (NAT64, 6to4) are not public unicast either.
    expect(await reasonOf('https://[64:ff9b::a00:1]/')).toContain('special-purpose');
    expect(await reasonOf('https://[2002:a00:1::]/')).toContain('special-purpose');
  });

  it('reads IPv4 addresses however they are spelled', async () => {
    expect(await reasonOf('https://2852039166/')).toContain('link-local');
    expect(await reasonOf('https://0xa9.0xfe.0xa9.0xfe/')).toContain('link-local');
    expect(await reasonOf('https://0177.1/')).toContain('loopback');
  });

  it('refuses a name that resolves to a private address, even beside public ones', async () => {
    expect(await reasonOf('https://inside.example.com/')).toBe(
      'the host is or resolves to a private address: webhooks are sent to public unicast addresses only',
    );
    // Issue 36: the rule is named, never the address a name resolves to inside someone's network.
    expect(await reasonOf('https://mixed.example.com/')).toContain('private');
    expect(await reasonOf('https://mixed.example.com/')).not.toContain('192.168.1.20');
    expect(await reasonOf('https://inside.example.com/')).not.toContain('10.1.2.3');
    expect(await reasonOf('https://metadata.example.com/')).toContain('link-local');
  });

  it('refuses names that do not resolve', async () => {
    expect(await reasonOf('https://nowhere.example.com/')).toBe(
      'the host nowhere.example.com does not resolve',
    );
    expect(await reasonOf('https://empty.example.com/')).toContain('does not resolve');
  });

  it('refuses other schemes, credentials, fragments and over-long URLs', async () => {
    expect(await reasonOf('http://hooks.example.com/')).toBe('the scheme must be https');
    expect(await reasonOf('ftp://hooks.example.com/')).toBe('the scheme must be https, not ftp');
    expect(await reasonOf('file:///etc/passwd')).toBe('the scheme must be https, not file');
    expect(await reasonOf('not a url')).toBe('not an absolute URL');
    expect(await reasonOf('https://user:pw@hooks.example.com/')).toContain('credentials');
    expect(await reasonOf('https://hooks.example.com/#x')).toContain('fragment');
    expect(await reasonOf(`https://hooks.example.com/${'a'.repeat(2100)}`)).toContain('longer than');
  });

  it('has no setting that loosens it: the service guard refuses loopback http whatever the stage', async () => {
    // Issue 20: STAGE=local used to switch loopback http on inside lib/ (and so in every bundle). Now
    // only local/stack.ts passes the local guard; deps built from any configuration alone are strict.
    const config = loadConfig({ STAGE: 'local', TABLE_PREFIX: 'unused-' });
    const logger = createLogger({ level: 'SILENT' });
    const deps = createCoreDeps({
      config,
      dynamo: createDynamoClients({ region: config.region, endpoint: 'http://127.0.0.1:9' }),
      clock: systemClock,
      logger,
      tiers,
      telemetry: new LogTelemetry(logger),
      resolveHost: resolve,
    });
    expect(
      await reasonOf('http://127.0.0.1:9001/2018-06-01/runtime/invocation/next', webhookUrlGuardOf(deps)),
    ).toBe('the scheme must be https');
    expect(config).not.toHaveProperty('webhookAllowLoopbackHttp');
  });

  it('allows plain http to loopback only on the local stack', async () => {
    expect((await local('http://127.0.0.1:4000/hook')).ok).toBe(true);
    expect((await local('http://[::1]:4000/hook')).ok).toBe(true);
    expect((await local('http://localhost.example.com:4000/hook')).ok).toBe(true);
    expect(await reasonOf('http://127.0.0.1:4000/hook')).toBe('the scheme must be https');
    // The exception is for plain http to loopback: loopback over https and http elsewhere stay refused.
    expect(await reasonOf('https://[::1]/hook', local)).toContain('loopback');
    expect(await reasonOf('http://hooks.example.com/', local)).toContain('only to a loopback address');
    expect(await reasonOf('http://10.0.0.1/', local)).toContain('private');
  });
});
