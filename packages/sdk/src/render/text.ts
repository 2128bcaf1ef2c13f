/**
 * A receipt as plain text, 40 columns wide like a till roll: for a notification, an e-mail body, a
 * screen reader, or a terminal.
 */
import { receiptView, type Receipt, type RenderOptions, type Row } from './view.js';

const WIDTH = 40;
const RULE = '-'.repeat(WIDTH);

/** Code points, not UTF-16 units: "•" and "é" take one column each. */
const columns = (text: string): number => [...text].length;

/** Label left, value right; a value too long for one line goes under its label. */
function pair(label: string, value: string, indent = ''): string[] {
  const gap = WIDTH - columns(indent + label) - columns(value);
  if (gap >= 1) return [`${indent}${label}${' '.repeat(gap)}${value}`];
  return [`${indent}${label}`, ' '.repeat(Math.max(0, WIDTH - columns(value))) + value];
}

/** Words wrapped at the width; a word longer than a line is cut. */
function wrap(text: string, indent = ''): string[] {
  const lines: string[] = [];
  let line = '';
  const room = WIDTH - columns(indent);
  for (const word of text.split(/\s+/).filter(Boolean)) {
    let rest = word;
    while (columns(rest) > room) {
      if (line) lines.push(line);
      line = '';
      const chars = [...rest];
      lines.push(chars.slice(0, room).join(''));
      rest = chars.slice(room).join('');
    }
    if (!line) line = rest;
    else if (columns(line) + 1 + columns(rest) <= room) line += ` ${rest}`;
    else {
      lines.push(line);
      line = rest;
    }
  }
  if (line) lines.push(line);
  return lines.map((text) => indent + text);
}

const centred = (text: string): string[] =>
  wrap(text).map((line) => ' '.repeat(Math.floor((WIDTH - columns(line)) / 2)) + line);

const rows = (list: Row[]): string[] => list.flatMap(({ label, value }) => pair(label, value));

export function renderReceiptText(receipt: Receipt, options: RenderOptions = {}): string {
  const view = receiptView(receipt, options);
  const lines: string[] = [
    ...centred(view.merchantName),
    ...view.merchantLines.flatMap(centred),
    '',
    ...centred(view.kind.toUpperCase()),
  ];
  if (view.refundOf) lines.push(...wrap(view.refundOf));
  lines.push('', ...rows(view.details), RULE, view.itemsHeading);
  for (const item of view.items) {
    lines.push(...wrap(item.name));
    for (const detail of item.details) lines.push(...wrap(detail, '    '));
    lines.push(...pair(`${item.quantity} × ${item.unitPrice}`, item.amount, '  '));
  }
  if (view.items.length === 0) lines.push('  (no items listed)');
  lines.push(
    RULE,
    ...rows(view.totals.slice(0, -1)),
    '='.repeat(WIDTH),
    ...pair(view.total.label, view.total.value),
  );
  for (const note of view.notes) lines.push('', ...wrap(note.label), ...wrap(note.value, '  '));
  // Text has no bars: the code's value, which a till can also key in.
  if (view.receiptCode)
    lines.push('', ...wrap(view.receiptCode.label), ...wrap(view.receiptCode.value, '  '));
  return `${lines.join('\n')}\n`;
}
