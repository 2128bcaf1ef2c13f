import { RemovalPolicy } from 'aws-cdk-lib';
import { Effect, PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

/**
 * The paging cursors' key (lib/crypto/cursor.ts): a Secrets Manager secret CloudFormation generates,
 * so the key is never in a template or a deploy log, read once per cold start by the functions that
 * page and by no other. A dedicated key, never the card-tag key. Under Secrets Manager's AWS-managed
 * key: what it protects is the opacity of cursors, which open only for their own user or webhook and
 * client anyway. Losing or replacing it only makes cursors already handed out start again, so it is
 * not retained.
 */
export class CursorSecret extends Construct {
  readonly secret: Secret;

  constructor(scope: Construct, id: string, props: { prefix: string }) {
    super(scope, id);
    this.secret = new Secret(this, 'Secret', {
      secretName: `${props.prefix}-cursor-key`,
      description: 'Paging cursor key: AES-256-GCM key material for the sealed list cursors',
      removalPolicy: RemovalPolicy.DESTROY,
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
  }

  /** What a function that pages is given: read this secret, and nothing else of it. */
  grantRead(role: IRole): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
  }
}
