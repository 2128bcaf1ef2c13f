import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal, type IRole, type Policy } from 'aws-cdk-lib/aws-iam';
import { Architecture, CfnFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { FunctionDefinition, RouteDefinition } from '../lib/kernel/route.js';
import { STATIC_ASSETS_DIR } from '../lib/http/static-assets.js';
import { bundleDefines } from '../lib/wiring/aws.js';
import { PAYMENT_SDKS, paymentSdkBundlingCommands, REQUIRE_BANNER } from './payment-sdks.js';

export interface ServiceFunctionProps {
  /** A route, or a function that serves no path (then `description` says what it does). */
  route: RouteDefinition | FunctionDefinition;
  /** The directory holding package.json: route entries are relative to it and esbuild runs there. */
  projectRoot: string;
  functionName: string;
  environment: Record<string, string>;
  logRetention: RetentionDays;
  /** Shared X-Ray write policy (see below for why it is not the function's own); absent: no tracing. */
  tracingPolicy?: Policy;
  /** For a function that serves no path of its own (the edge authorizer); otherwise method and path. */
  description?: string;
  /**
   * A role made in another stack (functionRole), for a function a retained key's policy names: the
   * escrow users (infra/data-stack.ts). Its permissions are still this construct's, in this stack.
   */
  role?: IRole;
  /** Reserved concurrent executions (a payment function's, from the stage's settings): its floor and its cap. */
  reservedConcurrency?: number;
}

export const DEFAULT_MEMORY_MB = 512;
export const DEFAULT_TIMEOUT_SECONDS = 10;

const shellQuote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

/** `claim-receipts` → `ClaimReceipts`: construct ids from route names. */
export const pascal = (name: string): string =>
  name
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((part) => `${part.charAt(0).toUpperCase()}${part.slice(1)}`)
    .join('');

/**
 * A function's own role instead of Lambda's default one: the default attaches
 * AWSLambdaBasicExecutionRole, which may write to every log group in the account; this one gets only
 * what ServiceFunction grants it (its own log group, traces) and what its route declares.
 */
export const functionRole = (scope: Construct, id: string, route: FunctionDefinition): Role =>
  new Role(scope, id, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `receipt-service ${route.name}`,
  });

/** Copies a route's staticAssets (npm module paths, or the project's own files from its root) beside the bundle. */
function staticAssetCommands(projectRoot: string, outputDir: string, assets: readonly string[]): string[] {
  if (assets.length === 0) return [];
  const require = createRequire(join(projectRoot, 'package.json'));
  const target = join(outputDir, STATIC_ASSETS_DIR);
  return [
    `mkdir -p ${shellQuote(target)}`,
    ...assets.map((asset) => `cp ${shellQuote(require.resolve(asset))} ${shellQuote(target)}/`),
  ];
}

/**
 * The house Lambda: one per route in functions/routes.ts, Node.js 24 on arm64, bundled by the local
 * esbuild (no Docker). Everything, the AWS SDK v3 included, is bundled (externalModules: []), so
 * the SDK that runs is the version package-lock.json pins and the tests ran against, not whatever
 * the runtime ships that month; minification keeps the cold start cost of that small.
 */
export class ServiceFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: IRole;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    const { route } = props;

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // A role from another stack is imported by name, so the policies granted below are made here, in
    // this stack, attached by that name: the role's own stack never refers back to this one.
    this.role = props.role
      ? Role.fromRoleName(this, 'Role', props.role.roleName, { mutable: true })
      : functionRole(this, 'Role', route);
    this.logGroup.grantWrite(this.role);
    props.tracingPolicy?.attachToRole(this.role);

    this.function = new NodejsFunction(this, 'Function', {
      functionName: props.functionName,
      description: props.description ?? ('path' in route ? `${route.method} ${route.path}` : route.name),
      entry: join(props.projectRoot, route.entry),
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: join(props.projectRoot, 'package-lock.json'),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: route.memoryMb ?? DEFAULT_MEMORY_MB,
      ...(props.reservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrency }),
      timeout: Duration.seconds(route.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS),
      role: this.role,
      logGroup: this.logGroup,
      environment: {
        ...props.environment,
        POWERTOOLS_SERVICE_NAME: 'receipt-service',
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        minify: true,
        // lib/kernel/errors.ts names errors after their classes; minified names would reach the logs.
        keepNames: true,
        sourceMap: true,
        sourceMapMode: SourceMapMode.DEFAULT,
        // Stack traces need file and line only; embedded sources would double the asset size.
        sourcesContent: false,
        // Payment SDKs ship beside the bundle and load on first use (payment-sdks.ts).
        externalModules: route.gateways ? [...PAYMENT_SDKS] : [],
        banner: REQUIRE_BANNER,
        // Leaves out the escrow and gateway adapters a route does not use (lib/wiring/aws.ts).
        define: bundleDefines(route),
        metafile: true,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_inputDir: string, outputDir: string) => [
            ...(route.gateways ? paymentSdkBundlingCommands(props.projectRoot, outputDir) : []),
            ...staticAssetCommands(props.projectRoot, outputDir, route.staticAssets ?? []),
            [
              shellQuote(process.execPath),
              '--import tsx',
              shellQuote(join(props.projectRoot, 'infra', 'bundle-guard.ts')),
              shellQuote(join(outputDir, 'index.meta.json')),
            ].join(' '),
          ],
        },
      },
    });

    // Tracing is switched on at the CloudFormation level instead of with `tracing: ACTIVE`, which
    // would add X-Ray's Resource "*" statement to this role's own policy, where a cdk-nag
    // suppression for it could also hide a real wildcard later. The shared policy carries it.
    (this.function.node.defaultChild as CfnFunction).tracingConfig = {
      mode: props.tracingPolicy ? Tracing.ACTIVE : Tracing.PASS_THROUGH,
    };
    // Lambda checks the role may write traces when the function is created.
    if (props.tracingPolicy) this.function.node.addDependency(props.tracingPolicy);
  }
}
