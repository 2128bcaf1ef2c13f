import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { ConfigError } from '../kernel/config.js';
import { deduplicationIdOf, type DeliveryMessage, type DeliveryQueue } from '../webhooks/queue.js';

/** SendMessageBatch takes ten entries at most. */
const SQS_BATCH = 10;

/**
 * The delivery queue in AWS: an SQS FIFO queue (infra/webhook-delivery.ts) whose message group is
 * the webhook, so SQS hands one webhook's attempts out one at a time and every other webhook's
 * meanwhile; the deduplication id is the attempt, so one queued twice within five minutes is one.
 */
export class SqsDeliveryQueue implements DeliveryQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(messages: readonly DeliveryMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += SQS_BATCH) {
      const chunk = messages.slice(start, start + SQS_BATCH);
      const result = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((message, index) => ({
            Id: String(index),
            MessageBody: JSON.stringify(message),
            MessageGroupId: message.webhookId,
            MessageDeduplicationId: deduplicationIdOf(message),
          })),
        }),
      );
      // The caller reports its record or leaves the delivery due: either way it is queued again.
      if ((result.Failed ?? []).length > 0)
        throw new Error(`${result.Failed!.length} webhook attempts could not be queued`);
    }
  }
}

/** The queue a dispatcher or sweeper Lambda sends to: WEBHOOK_QUEUE_URL, set by the stack. */
export function awsDeliveryQueue(
  region: string,
  tracer?: Tracer,
  env: NodeJS.ProcessEnv = process.env,
): DeliveryQueue {
  const url = env.WEBHOOK_QUEUE_URL;
  if (!url) throw new ConfigError('WEBHOOK_QUEUE_URL is not set for a function that queues webhook attempts');
  const client = new SQSClient({ region });
  return new SqsDeliveryQueue(tracer ? tracer.captureAWSv3Client(client) : client, url);
}
