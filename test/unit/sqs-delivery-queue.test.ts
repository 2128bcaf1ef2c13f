import { beforeEach, describe, expect, it } from '@jest/globals';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsDeliveryQueue } from '../../lib/wiring/aws-delivery-queue.js';
import type { DeliveryMessage } from '../../lib/webhooks/queue.js';

/*
 * In AWS the whole of per-receiver isolation is the FIFO queue's message group: SQS hands out one
 * group's messages one at a time and other groups' meanwhile. One group for every webhook would make
 * one slow receiver hold up all the others, and no test on the local stack (its own queue) would see it.
 */
const sqs = mockClient(SQSClient);
const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/000000000000/webhook-delivery.fifo';
const queue = () => new SqsDeliveryQueue(new SQSClient({ region: 'eu-west-1' }), queueUrl);

const message = (webhookId: string, deliveryId: string, attemptCount = 1): DeliveryMessage => ({
  webhookId,
  deliveryId,
  attemptCount,
});

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
});

const sentEntries = () =>
  sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries ?? []);

describe('SqsDeliveryQueue', () => {
  it("groups each attempt by its webhook, so one receiver's attempts never wait behind another's", async () => {
    const messages = [
      message('wh-slow', 'd-1'),
      message('wh-fast', 'd-2'),
      message('wh-slow', 'd-3', 2),
      message('wh-other', 'd-4'),
    ];
    await queue().enqueue(messages);

    const entries = sentEntries();
    expect(entries.map((entry) => [entry.MessageGroupId, JSON.parse(entry.MessageBody!)])).toEqual(
      messages.map((sent) => [sent.webhookId, sent]),
    );
    // Three webhooks, three groups: a single group for all would serialise every receiver.
    expect(new Set(entries.map((entry) => entry.MessageGroupId)).size).toBe(3);
    expect(sqs.commandCalls(SendMessageBatchCommand)[0]!.args[0].input.QueueUrl).toBe(queueUrl);
  });

  it('deduplicates by attempt: the same delivery again is a new message only on its next attempt', async () => {
    await queue().enqueue([message('wh-1', 'd-1', 1), message('wh-1', 'd-1', 2)]);
    expect(sentEntries().map((entry) => entry.MessageDeduplicationId)).toEqual(['d-1-1', 'd-1-2']);
  });

  it('sends ten to a batch, the most SendMessageBatch takes, each batch keeping its groups', async () => {
    const messages = Array.from({ length: 23 }, (_, index) => message(`wh-${index % 4}`, `d-${index}`));
    await queue().enqueue(messages);

    const batches = sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries ?? []);
    expect(batches.map((batch) => batch.length)).toEqual([10, 10, 3]);
    // Entry ids are unique within a batch, as SQS requires.
    for (const batch of batches) expect(new Set(batch.map((entry) => entry.Id)).size).toBe(batch.length);
    expect(sentEntries().map((entry) => entry.MessageGroupId)).toEqual(
      messages.map((sent) => sent.webhookId),
    );
  });

  it('fails when SQS refuses an entry, so the delivery stays due and is queued again', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: '0', SenderFault: false, Code: 'InternalError' }],
    });
    await expect(queue().enqueue([message('wh-1', 'd-1')])).rejects.toThrow(
      '1 webhook attempts could not be queued',
    );
  });
});
