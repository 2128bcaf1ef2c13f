import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { routes } from '../../functions/routes.js';

/**
 * The pages a newcomer reads first stay short and in their order, and each fact keeps one home:
 * an endpoint's behaviour is its route declaration's (rendered by the reference), which docs/API.md
 * links to instead of repeating.
 */
const root = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const headings = (page: string) => page.split('\n').filter((line) => /^## /.test(line));

describe('README.md', () => {
  it("is a newcomer's first ten minutes: at most 250 lines, its sections in order", () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    expect(headings(readme)).toEqual([
      '## Requirements',
      '## Run it',
      '## Two API keys',
      '## Walk-through with curl',
      '## The device flow: keys that never leave the phone',
      '## The console',
      '## Where to go next',
    ]);
  });
});

describe('docs/API.md', () => {
  const guide = read('docs/API.md');

  it('is at most 600 lines', () => {
    expect(guide.split('\n').length).toBeLessThanOrEqual(600);
  });

  it('links every endpoint to its reference entry instead of describing it again', () => {
    const operationId = (name: string) =>
      name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    const missing = routes
      .filter((route) => 'path' in route)
      .map((route) => `| \`${route.method} ${route.path.replace('/api/v1', '')}\` |`)
      .filter((row) => !guide.includes(row));
    expect(missing).toEqual([]);
    for (const route of routes) {
      expect(guide).toContain(`/api/v1/docs#operation/${operationId(route.name)})`);
    }
    // No endpoint has a section of its own here: its behaviour lives in its route declaration.
    expect(
      headings(guide).concat(guide.split('\n').filter((line) => /^### `/.test(line))),
    ).not.toContainEqual(expect.stringMatching(/^###? `(GET|POST|DELETE) /));
  });
});
