import { readFile, writeFile } from 'node:fs/promises';
import { deliveryQueue } from '../functions/webhooks/webhook-deliver/function.js';
import {
  deduplicationIdOf,
  deliverQueued,
  recordDeadLettered,
  type DeliveryMessage,
  type DeliveryQueue,
} from '../lib/webhooks/queue.js';
import type { DeliveryDeps } from '../lib/webhooks/send.js';

/** SQS FIFO's deduplication window, which this stand-in keeps too. */
const DEDUPLICATION_MS = 5 * 60_000;

/** A message as the queue holds it: how often it was handed out, and when it may be again. */
interface Held {
  message: DeliveryMessage;
  receives: number;
  visibleAt: number;
}

interface Group {
  messages: Held[];
  /** The message handed out, until its consumer answers: a group has one at a time. */
  inFlight?: Promise<void>;
}

export interface LocalQueueSettings {
  /** How long a message whose consumer failed is kept from every consumer (the injected clock's ms). */
  visibilityTimeoutMs: number;
  /** Receives before a message goes to the dead-letter queue. */
  maxReceiveCount: number;
}

/**
 * The local stand-in for the SQS FIFO delivery queue, with what the design relies on
 * (lib/webhooks/queue.ts): one webhook's messages (a message group) are handed out one at a time, in
 * the order queued, and every other webhook's meanwhile, to the same code the queue's Lambda runs. A
 * message is removed only when its consumer answers; one whose consumer failed stays at the head of
 * its group, which it holds, and is handed out again once its visibility timeout has passed by the
 * injected clock (`redeliver`, which the local dispatcher calls as it polls, as SQS needs no one), at
 * most maxReceiveCount times, then goes to the dead-letter path the dead-letter queue's consumer runs
 * in AWS. The same attempt queued twice within five minutes is queued once. The settings are the
 * AWS queue's (functions/webhooks/webhook-deliver/function.ts). With a `file` (the local stack's data
 * directory) the messages held are written there at every change and `restore` reads them back, so a
 * stack restarted mid-delivery loses none, as SQS keeps them; without, they live in memory.
 */
export class LocalDeliveryQueue implements DeliveryQueue {
  private readonly groups = new Map<string, Group>();
  private readonly queuedAt = new Map<string, number>();
  /** Messages the dead-letter path could not record yet: tried again at each redeliver. */
  private readonly deadLetters: DeliveryMessage[] = [];
  /** The last write of the held messages to `file`, each after the one before. */
  private saved: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly settings: LocalQueueSettings = {
      visibilityTimeoutMs: deliveryQueue.visibilityTimeoutSeconds * 1_000,
      maxReceiveCount: deliveryQueue.maxReceiveCount,
    },
    private readonly file?: string,
  ) {}

  /**
   * The messages a previous process held (`file`), queued again with their receive counts: visible at
   * once, their consumer having gone with that process.
   */
  async restore(): Promise<void> {
    if (!this.file) return;
    let stored: { messages: Held[]; deadLetters: DeliveryMessage[] };
    try {
      stored = JSON.parse(await readFile(this.file, 'utf8')) as typeof stored;
    } catch {
      return;
    }
    const now = this.now();
    this.deadLetters.push(...stored.deadLetters);
    for (const held of stored.messages) {
      const group = this.groups.get(held.message.webhookId) ?? { messages: [] };
      this.groups.set(held.message.webhookId, group);
      group.messages.push({ ...held, visibleAt: now });
    }
    for (const [webhookId, group] of this.groups) this.handOut(webhookId, group);
  }

  async enqueue(messages: readonly DeliveryMessage[]): Promise<void> {
    const now = this.now();
    for (const [id, at] of this.queuedAt) if (now - at >= DEDUPLICATION_MS) this.queuedAt.delete(id);
    for (const message of messages) {
      const id = deduplicationIdOf(message);
      if (this.queuedAt.has(id)) continue;
      this.queuedAt.set(id, now);
      const group = this.groups.get(message.webhookId) ?? { messages: [] };
      this.groups.set(message.webhookId, group);
      group.messages.push({ message, receives: 0, visibleAt: now });
      this.handOut(message.webhookId, group);
    }
    await this.save();
  }

  /**
   * Hands out again each group's first message whose visibility timeout has passed, and retries the
   * dead-letter path for what it could not record.
   */
  async redeliver(): Promise<void> {
    for (const [webhookId, group] of this.groups) this.handOut(webhookId, group);
    for (const message of this.deadLetters.splice(0)) await this.deadLetter(message);
    await this.save();
  }

  /** Messages held, handed out or not (what SQS calls visible and in flight), and dead letters unrecorded. */
  get size(): number {
    let held = this.deadLetters.length;
    for (const group of this.groups.values()) held += group.messages.length;
    return held;
  }

  /** Until every message handed out so far has been answered, and those it let through (each attempt bounded by its 10 s). */
  async drain(): Promise<void> {
    for (;;) {
      const running = [...this.groups.values()].flatMap((group) => (group.inFlight ? [group.inFlight] : []));
      if (running.length === 0) return this.saved;
      await Promise.all(running);
    }
  }

  private now(): number {
    return this.deps.clock.now().getTime();
  }

  private handOut(webhookId: string, group: Group): void {
    const head = group.messages[0];
    if (group.inFlight || !head || head.visibleAt > this.now()) {
      if (!head && !group.inFlight) this.groups.delete(webhookId);
      return;
    }
    head.receives += 1;
    group.inFlight = this.consume(head, group).finally(() => {
      group.inFlight = undefined;
      this.handOut(webhookId, group);
    });
  }

  private async consume(head: Held, group: Group): Promise<void> {
    try {
      await deliverQueued(this.deps, head.message);
      group.messages.shift();
      await this.save();
    } catch (error) {
      this.deps.logger.warn('queued webhook attempt not recorded; the message comes back', {
        webhookId: head.message.webhookId,
        deliveryId: head.message.deliveryId,
        receives: head.receives,
        error: error instanceof Error ? error.name : 'unknown',
      });
      if (head.receives >= this.settings.maxReceiveCount) {
        group.messages.shift();
        await this.deadLetter(head.message);
      } else head.visibleAt = this.now() + this.settings.visibilityTimeoutMs;
      await this.save();
    }
  }

  /** Writes what is held to `file`, after any write under way, so the last state is the one kept. */
  private save(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    this.saved = this.saved.then(async () => {
      const messages = [...this.groups.values()].flatMap((group) => group.messages);
      await writeFile(file, JSON.stringify({ messages, deadLetters: this.deadLetters })).catch(
        (error: unknown) =>
          this.deps.logger.warn('local delivery queue not saved; the next change saves it', {
            error: error instanceof Error ? error.name : 'unknown',
          }),
      );
    });
    return this.saved;
  }

  private async deadLetter(message: DeliveryMessage): Promise<void> {
    try {
      await recordDeadLettered(this.deps, message);
    } catch {
      this.deadLetters.push(message);
    }
  }
}
