/** Console tables and the target summary shared by every section. */

export type Cell = string | number;

export interface TargetCheck {
  section: string;
  target: string;
  measured: string;
  /** null when the target could not be measured in this run (a section skipped or failed). */
  met: boolean | null;
  /** A comparison the brief asks for without a pass mark: printed, never judged. */
  informational?: boolean;
  note?: string;
}

const formatCell = (cell: Cell): string => (typeof cell === 'number' ? formatNumber(cell) : cell);

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs >= 1000 ? 0 : abs >= 100 ? 1 : abs >= 10 ? 2 : 3;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A plain-text table: numbers right-aligned, text left-aligned; markdown-compatible when pasted. */
export function printTable(
  title: string,
  headers: readonly string[],
  rows: readonly (readonly Cell[])[],
): void {
  const text = rows.map((row) => row.map(formatCell));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...text.map((row) => (row[column] ?? '').length)),
  );
  const numeric = headers.map(
    (_, column) => rows.length > 0 && rows.every((row) => typeof row[column] === 'number'),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return numeric[column] ? cell.padStart(width) : cell.padEnd(width);
      })
      .join(' | ')} |`;
  console.log(`\n${title}`);
  console.log(line(headers));
  console.log(
    `|${widths.map((width, column) => (numeric[column] ? `${'-'.repeat(width + 1)}:` : '-'.repeat(width + 2))).join('|')}|`,
  );
  for (const row of text) console.log(line(row));
}

export const verdict = (target: Pick<TargetCheck, 'met' | 'informational'>): string =>
  target.informational
    ? 'info (no target)'
    : target.met === null
      ? 'not measured'
      : target.met
        ? 'met'
        : 'NOT MET';

export function printTargets(title: string, targets: readonly TargetCheck[]): void {
  printTable(
    title,
    ['section', 'target', 'measured', 'result'],
    targets.map((target) => [target.section, target.target, target.measured, verdict(target)]),
  );
  for (const target of targets) if (target.note) console.log(`  - ${target.section}: ${target.note}`);
}
