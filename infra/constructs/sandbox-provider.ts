/**
 * The sandbox provider a stack deploys for its http targets that are not live
 * (lib/workflow/adapters/sandbox-provider.ts says what it answers): a function behind a function
 * URL that takes only SigV4-signed calls (AuthType AWS_IAM; never an open endpoint), and the table
 * of its idempotency keys. Only the roles granted `grantCall` (the sender's and the reconciler's)
 * may call it.
 *
 * The keys table is not one of the workflow's: it holds a stand-in's answers, forgotten by TTL
 * after the key retention, and nothing in it must outlive the stack, so it is deleted with it
 * (unlike every workflow table, which is retained with deletion protection).
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { FunctionUrlAuthType, type FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { SANDBOX_ENV, type SandboxBehaviour } from '../../lib/workflow/adapters/index.js';
import { fencedFunction, type FencedFunction } from './function.js';

export interface SandboxProviderProps {
  /** How it misbehaves when told to, and how long it keeps a key (at least the longest a sandboxed target declares). */
  readonly behaviour: SandboxBehaviour;
  readonly service: string;
}

export class SandboxProvider extends Construct {
  readonly keys: Table;
  readonly provider: FencedFunction;
  readonly url: FunctionUrl;

  constructor(scope: Construct, id: string, props: SandboxProviderProps) {
    super(scope, id);
    const b = props.behaviour;
    this.keys = new Table(this, 'Keys', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: 'expiresAt',
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.provider = fencedFunction(this, 'SandboxProvider', {
      entry: 'functions/sandbox-provider.ts',
      description: 'Sandbox provider: answers the http targets that are not live with a payment provider\'s idempotency contract (signed calls only)',
      timeout: Duration.seconds(10),
      memorySize: 256,
      environment: {
        [SANDBOX_ENV.keysTable]: this.keys.tableName,
        ...(b.keyRetentionMs === undefined ? {} : { [SANDBOX_ENV.keyRetentionMs]: String(b.keyRetentionMs) }),
        [SANDBOX_ENV.declineShare]: String(b.declineShare),
        [SANDBOX_ENV.throttleShare]: String(b.throttleShare),
        [SANDBOX_ENV.errorShare]: String(b.errorShare),
        POWERTOOLS_SERVICE_NAME: props.service,
      },
    });
    this.keys.grant(this.provider.role, 'dynamodb:PutItem', 'dynamodb:GetItem');
    this.url = this.provider.fn.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM });
    Validations.of(this.provider.fn).acknowledge({
      id: 'Serverless::Serverless-LambdaDLQ',
      reason: "The sandbox provider is invoked only synchronously, through its function URL, which never uses a function dead-letter queue: the caller (the sender or the reconciler) gets the error and keeps the item to send again.",
    });
  }

  /** lambda:InvokeFunctionUrl on this function, for the roles that send to it. */
  grantCall(grantee: IGrantable): void {
    this.provider.fn.grantInvokeUrl(grantee);
  }
}
