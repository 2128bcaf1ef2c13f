import { Aws, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccountRootPrincipal,
  Effect,
  PolicyDocument,
  PolicyStatement,
  type IRole,
} from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { keyAdministration } from './permissions.js';

/** Only through Secrets Manager's own calls: the key opens this secret and nothing else. */
const secretsManagerViaService = (): Record<string, unknown> => ({
  StringEquals: {
    'kms:ViaService': `secretsmanager.${Aws.REGION}.amazonaws.com`,
    'kms:CallerAccount': Aws.ACCOUNT_ID,
  },
});

/**
 * The card-tag key (lib/crypto/card-tag.ts): a Secrets Manager secret under a customer-managed KMS key,
 * read by the functions that tag cards once per cold start and every 5 minutes after. CloudFormation
 * generates its first version's seed, so the key is never in a template or a deploy log; the admin
 * CLI adds versions (`card-key rotate --aws`). Retained: every stored card tag is unusable without it.
 */
export class CardTagSecret extends Construct {
  readonly key: Key;
  readonly secret: Secret;

  constructor(scope: Construct, id: string, props: { prefix: string; stage: string }) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: `receipt-service ${props.stage}: the card-tag key's secret`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new PolicyDocument({
        statements: [
          keyAdministration(),
          new PolicyStatement({
            sid: 'UseThroughSecretsManager',
            effect: Effect.ALLOW,
            principals: [new AccountRootPrincipal()],
            actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey*', 'kms:DescribeKey'],
            resources: ['*'],
            conditions: secretsManagerViaService(),
          }),
        ],
      }),
    });
    this.secret = new Secret(this, 'Secret', {
      secretName: `${props.prefix}-card-tag-key`,
      description: 'Card-tag HMAC key versions: {"seed"} from CloudFormation, then {"versions":[…]}',
      encryptionKey: this.key,
      removalPolicy: RemovalPolicy.RETAIN,
      generateSecretString: {
        secretStringTemplate: '{}',
        generateStringKey: 'seed',
        passwordLength: 64,
        excludePunctuation: true,
      },
    });
  }

  /** What a function that tags cards is given: read this secret, decrypt it through Secrets Manager. */
  grantRead(role: IRole): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
    role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['kms:Decrypt'],
        resources: [this.key.keyArn],
        conditions: secretsManagerViaService(),
      }),
    );
  }
}
