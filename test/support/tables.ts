import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { requireAllTables } from '../../lib/kernel/config.js';
import type { TestStack } from './stack.js';

/** Every item of every table of the stack, as text: what a table copy would show. */
export async function dumpTables(stack: Pick<TestStack, 'config' | 'deps'>): Promise<string> {
  const dumps: string[] = [];
  for (const table of Object.values(requireAllTables(stack.config))) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await stack.deps.dynamo.doc.send(
        new ScanCommand({ TableName: table, ExclusiveStartKey: startKey }),
      );
      dumps.push(JSON.stringify(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    // Index projections are the same items; nothing else is stored.
  }
  return dumps.join('\n');
}
