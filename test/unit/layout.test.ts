import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { layoutPage, layoutTable, withLayout } from '../../scripts/layout.js';

describe("docs/ARCHITECTURE.md's layout table", () => {
  it('is the table the tree gives (run `npm run layout` after adding or moving a folder)', () => {
    const page = readFileSync(layoutPage, 'utf8');
    expect(page).toBe(withLayout(page));
  });

  it('names every endpoint folder and every floor of lib/', () => {
    const table = layoutTable();
    expect(table).toContain('`functions/receipts/`');
    expect(table).toMatch(/`lib\/kernel\/` \| floor 1:/);
    expect(table).toMatch(/`lib\/wiring\/` \| floor \d+:/);
  });
});
