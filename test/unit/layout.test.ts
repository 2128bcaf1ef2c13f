import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { layoutTable, readmeWithLayout } from '../../scripts/layout.js';

const root = join(import.meta.dirname, '../..');

describe("the README's layout table", () => {
  it('is the table the tree gives (run `npm run layout` after adding or moving a folder)', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toBe(readmeWithLayout(readme));
  });

  it('names every endpoint folder and every floor of lib/', () => {
    const table = layoutTable();
    expect(table).toContain('`functions/receipts/`');
    expect(table).toMatch(/`lib\/kernel\/` \| floor 1:/);
    expect(table).toMatch(/`lib\/wiring\/` \| floor \d+:/);
  });
});
