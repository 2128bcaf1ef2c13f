import { CfnOutput, RemovalPolicy, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import {
  AccountRootPrincipal,
  Effect,
  PolicyDocument,
  PolicyStatement,
  type Role,
} from 'aws-cdk-lib/aws-iam';
import { Alias, Key, KeySpec, KeyUsage } from 'aws-cdk-lib/aws-kms';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import { routes as serviceRoutes, type RouteDefinition } from '../functions/routes.js';
import { tableDefinitions, type TableDefinition, type TableKey } from '../lib/kernel/tables.js';
import { CardTagSecret } from './card-tag-secret.js';
import { CursorSecret } from './cursor-secret.js';
import { DataTables } from './data-tables.js';
import { applyDataNagSuppressions } from './nag-suppressions.js';
import { keyAdministration } from './permissions.js';
import { functionRole, pascal } from './service-function.js';
import { resolveSettings, type ServiceSettings, type SettingsInput } from './settings.js';

export interface ReceiptServiceDataStackProps extends StackProps {
  /** Overrides context and defaults (see infra/settings.ts). */
  settings?: SettingsInput;
  /** Defaults to functions/routes.ts: the routes that use escrow get their roles here. */
  routes?: readonly RouteDefinition[];
}

/**
 * What outlives a deployment of the code (docs/DEPLOY.md, "Stacks"): the tables, the keys that
 * encrypt them or escrow receipts, the card-tag key's secret, and the roles the escrow key's policy
 * names. Everything stored is retained here; no function lives here, so deploying code never
 * updates this stack. The service stack (receipt-service-stack.ts) refers to these resources.
 */
export class ReceiptServiceDataStack extends Stack {
  readonly settings: ServiceSettings;
  readonly data: DataTables;
  readonly escrowKey: Key;
  /** The card-tag key's secret and its customer-managed key. */
  readonly cardTagSecret: CardTagSecret;
  /** The paging cursors' key (infra/cursor-secret.ts). */
  readonly cursorSecret: CursorSecret;
  readonly escrowKeyAlias: Alias;
  /** Signs the key log's tree heads (lib/key-log/tree-head.ts): a P-256 signing key, retained. */
  readonly logKey: Key;
  /**
   * Route name → the role its function runs as, for the routes that use escrow: the escrow key's
   * policy names them, so they live beside the key (a key policy naming roles of the service stack
   * would make each stack depend on the other).
   */
  readonly escrowRoles: ReadonlyMap<string, Role>;

  constructor(scope: Construct, id: string, props: ReceiptServiceDataStackProps = {}) {
    super(scope, id, props);
    const settings = resolveSettings(this, props.settings);
    this.settings = settings;
    const routes = props.routes ?? serviceRoutes;

    Tags.of(this).add('service', 'receipt-service');
    Tags.of(this).add('stage', settings.stage);

    this.data = new DataTables(this, 'Data', { prefix: settings.resourcePrefix, stage: settings.stage });
    this.cardTagSecret = new CardTagSecret(this, 'CardTagKey', {
      prefix: settings.resourcePrefix,
      stage: settings.stage,
    });
    this.cursorSecret = new CursorSecret(this, 'CursorKey', { prefix: settings.resourcePrefix });

    // Wraps receipt keys for recipients who are not registered yet. Retained on stack deletion:
    // escrowed receipts already stored can only ever be opened with this key. Its policy leaves the
    // account administration only: who may decrypt is named in it, role by role (nameEscrowKeyUsers),
    // so no IAM policy elsewhere in the account can open escrow.
    this.escrowKey = new Key(this, 'EscrowKey', {
      description: `receipt-service ${settings.stage}: escrow key for receipts of unregistered recipients`,
      keySpec: KeySpec.RSA_2048,
      keyUsage: KeyUsage.ENCRYPT_DECRYPT,
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new PolicyDocument({ statements: [keyAdministration()] }),
    });
    // The alias goes with the stack so a redeploy of the stage can create it again. Functions name the
    // key by alias: the id is shown in envelopes (escrowKeyId), and an ARN would show the account.
    this.escrowKeyAlias = new Alias(this, 'EscrowKeyAlias', {
      aliasName: `alias/${settings.resourcePrefix}-escrow`,
      targetKey: this.escrowKey,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Tree heads signed under it are out there for good: retained, and never rotated (a verifier pins it).
    // The routes that declare `logKey` are granted Sign and GetPublicKey by IAM in the service stack.
    this.logKey = new Key(this, 'LogSigningKey', {
      description: `receipt-service ${settings.stage}: signs the merchant key log's tree heads`,
      keySpec: KeySpec.ECC_NIST_P256,
      keyUsage: KeyUsage.SIGN_VERIFY,
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new PolicyDocument({
        statements: [
          keyAdministration(),
          new PolicyStatement({
            sid: 'IamGrantsSigningOnly',
            effect: Effect.ALLOW,
            principals: [new AccountRootPrincipal()],
            actions: ['kms:Sign', 'kms:GetPublicKey'],
            resources: ['*'],
          }),
        ],
      }),
    });

    this.escrowRoles = new Map(
      routes
        .filter((route) => route.escrow)
        .map((route) => [route.name, functionRole(this, `${pascal(route.name)}EscrowUserRole`, route)]),
    );
    this.nameEscrowKeyUsers(routes);

    this.addOutputs(settings);

    applyDataNagSuppressions({
      cardTagSecret: this.cardTagSecret.secret,
      cursorSecret: this.cursorSecret.secret,
      ephemeralTables: Object.entries(this.data.tables)
        .filter(([key]) => !(tableDefinitions[key as TableKey] as TableDefinition).durable)
        .map(([, table]) => table),
    });
  }

  /**
   * The escrow key's policy names each role that uses the key: the key and the roles are made in this
   * stack, the functions that run as them in the service stack. Every escrow user reads the public
   * key; only routes that unwrap may decrypt, and only with the algorithm escrow wraps with
   * (lib/crypto/escrow.ts).
   */
  private nameEscrowKeyUsers(routes: readonly RouteDefinition[]): void {
    const rolesOf = (uses: readonly NonNullable<RouteDefinition['escrow']>[]) =>
      routes
        .filter((route) => route.escrow && uses.includes(route.escrow))
        .map((route) => this.escrowRoles.get(route.name) as Role);
    const readers = rolesOf(['wrap', 'wrapAndUnwrap']);
    if (readers.length > 0) {
      this.escrowKey.addToResourcePolicy(
        new PolicyStatement({
          sid: 'EscrowUsersReadThePublicKey',
          effect: Effect.ALLOW,
          principals: readers,
          actions: ['kms:GetPublicKey', 'kms:DescribeKey'],
          resources: ['*'],
        }),
      );
    }
    const unwrappers = rolesOf(['wrapAndUnwrap']);
    if (unwrappers.length > 0) {
      this.escrowKey.addToResourcePolicy(
        new PolicyStatement({
          sid: 'OnlyTheseRolesUnwrapEscrow',
          effect: Effect.ALLOW,
          principals: unwrappers,
          actions: ['kms:Decrypt'],
          resources: ['*'],
          conditions: { StringEquals: { 'kms:EncryptionAlgorithm': 'RSAES_OAEP_SHA_256' } },
        }),
      );
    }
  }

  private addOutputs(settings: ServiceSettings): void {
    new CfnOutput(this, 'EscrowKeyArn', { value: this.escrowKey.keyArn });
    new CfnOutput(this, 'TablePrefix', {
      value: `${settings.resourcePrefix}-`,
      description: 'TABLE_PREFIX for the admin CLI',
    });
    new CfnOutput(this, 'ApiKeysTable', {
      value: this.data.tables.apiKeys.tableName,
      description: 'TABLE_API_KEYS for `npm run admin -- api-keys ... --aws`',
    });
    new StringParameter(this, 'TablePrefixParameter', {
      parameterName: `/${settings.stage}/receipt-service/table-prefix`,
      stringValue: `${settings.resourcePrefix}-`,
      description: 'TABLE_PREFIX for the admin CLI',
    });
  }
}
