/**
 * Ends every run with the plain closing line CI reads in any language: "N passed, N failed, N skipped".
 * It waits a tick so that it comes after Jest's own summary.
 */
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    return new Promise((resolve) =>
      setTimeout(() => {
        process.stdout.write(
          `\n${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
        );
        resolve();
      }, 0),
    );
  }
}
