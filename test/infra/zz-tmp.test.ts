import { it, expect } from '@jest/globals';
import { existsSync } from 'node:fs';
import { synth } from './support.js';
it('x', () => {
  console.log(existsSync('/work/main/functions/openapi/handler.ts'));
  const { template } = synth();
  console.log(Object.values(template.findResources('AWS::Lambda::Function')).map((f: any) => f.Properties.FunctionName));
});
