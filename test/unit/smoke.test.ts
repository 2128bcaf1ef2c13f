import { describe, expect, it } from '@jest/globals';

describe('toolchain', () => {
  it('runs on the Lambda runtime major version', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});
