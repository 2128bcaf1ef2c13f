import { patchScript, readStaticAsset } from '../../../lib/http/static-assets.js';

export const REDOC_MODULE = 'redoc/bundles/redoc.standalone.js';

/**
 * Redoc's standalone bundle, changed in two places so that it runs under the page's policy with
 * nothing blocked and nothing fetched from elsewhere.
 */
export function loadRedoc(importMetaUrl: string): string {
  return patchScript(readStaticAsset(REDOC_MODULE, importMetaUrl), [
    {
      why: 'the attribution logo is an image on redoc.ly; the attribution text stays',
      find: 'e?n.createElement("img",{alt:"redocly logo",onError:()=>t(!1),src:"https://cdn.redoc.ly/redoc/logo-mini.svg"}):null',
      replace: 'null',
    },
    {
      // Its bundled CSS (perfect-scrollbar) is inserted as <style> elements while the script loads,
      // before Redoc.init could pass the nonce on: they take the nonce of the script that loads them.
      why: "the style elements inserted at load time carry the page's nonce",
      find: 'r.nc=void 0',
      replace: 'r.nc=document.currentScript&&document.currentScript.nonce||void 0',
    },
  ]);
}

/** Starts Redoc on the embedded document; a file of its own, since the policy allows no inline script. */
export const initScript = `(function () {
  var container = document.getElementById('redoc');
  var spec = JSON.parse(document.getElementById('openapi-document').textContent);
  // Search runs in a blob: worker, which the policy does not allow; the sidebar lists every operation.
  window.Redoc.init(spec, { nonce: container.dataset.nonce, disableSearch: true, hideDownloadButton: false }, container);
})();
`;

/** Only this origin; styles also by the response's nonce, images also as data: URLs (inline SVG icons). */
export const pagePolicy = (nonce: string): string =>
  [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * The page. The document is embedded as a JSON data block (never executed), with `<` escaped so no
 * text in it can close the block; scripts are relative URLs, so the page works under a stage prefix.
 */
export function renderPage(document: { json: string; title: string }, nonce: string): string {
  const json = document.json.replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(document.title)} — API reference</title>
<style nonce="${nonce}">body { margin: 0; }</style>
</head>
<body>
<div id="redoc" data-nonce="${nonce}"></div>
<script type="application/json" id="openapi-document">${json}</script>
<script src="docs?asset=redoc.standalone.js" nonce="${nonce}"></script>
<script src="docs?asset=init.js"></script>
</body>
</html>
`;
}
