import { join, sep } from 'node:path';
import Sequencer from '@jest/test-sequencer';

/*
 * Jest orders a run by each file's duration in its last run, longest first, so that no worker is left
 * with a long file at the end. A clean clone (CI) has no last run, and Jest falls back to file size,
 * which puts the files that wait longest (npm start, Chromium, a second emulator: the slow tier's) in
 * the middle of the run and some of them at its end, where the other workers have nothing left to
 * overlap their waits with. With no durations known, this starts them first. The CDK tests (test/infra)
 * stay where size puts them: they wait for the run's shared synthesis, which starts with the run.
 */
const waitsLong = ({ path, context: { config } }) =>
  config.displayName?.name === 'slow' && !path.startsWith(join(config.rootDir, 'test', 'infra') + sep);

export default class WaitingFilesFirst extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => test.duration != null)) return sorted;
    return [...sorted.filter(waitsLong), ...sorted.filter((test) => !waitsLong(test))];
  }
}
