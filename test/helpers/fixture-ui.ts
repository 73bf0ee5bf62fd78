// A stand-in for a built OpenHands web UI (frontend/build), written by the test: index.html, a
// content-hashed entry script, a stylesheet and a locale file. The script replays the UI's own
// start-up calls in the UI's order and manner — same-origin XMLHttpRequest (the UI uses axios),
// no auth header of any kind, so only the browser's cookie authenticates — and renders what it
// got. A "Save settings" button posts the settings form as the settings modal does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ENTRY_SCRIPT = 'assets/entry.client-Bq7xK2mZ.js';
export const STYLESHEET = 'assets/root-C0ffee42.css';

const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>OpenHands</title>
  <link rel="stylesheet" href="/${STYLESHEET}">
  <script type="module" src="/${ENTRY_SCRIPT}"></script>
</head>
<body>
  <main>
    <h1 id="title">Loading…</h1>
    <p id="phase">starting</p>
    <button id="save" type="button" disabled>Save settings</button>
    <ol id="calls"></ol>
  </main>
</body>
</html>`;

const STYLE = `body { font: 15px system-ui, sans-serif; margin: 2rem; } li.ok { color: #1a7f37; } li.failed { color: #b42318; }`;

const LOCALE = { APP_TITLE: 'OpenHands (fixture build)', SETTINGS$SAVE: 'Save settings' };

// The start-up sequence of the OSS UI on "/" (home), in its order: the PostHog key read, the
// config query, settings (on 404 the settings modal's options, one after the other), recent
// conversations, then, with providers stored, the git user, suggested tasks, the repository
// picker's first page and the branches of the selected repository.
const ENTRY = `
const calls = (window.__calls = []);
const list = document.getElementById('calls');

function xhr(method, url, body) {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open(method, url);
    request.setRequestHeader('Accept', 'application/json, text/plain, */*');
    if (body !== undefined) request.setRequestHeader('Content-Type', 'application/json');
    const finish = (status, text) => {
      let data = text;
      try { data = JSON.parse(text); } catch (e) { /* not JSON */ }
      const entry = { method, url, status, data };
      calls.push(entry);
      const item = document.createElement('li');
      item.className = status >= 200 && status < 300 ? 'ok' : 'failed';
      item.textContent = method + ' ' + url + ' → ' + status;
      list.appendChild(item);
      resolve(entry);
    };
    request.onload = () => finish(request.status, request.responseText);
    request.onerror = () => finish(0, '');
    request.send(body === undefined ? null : JSON.stringify(body));
  });
}

function phase(text) {
  document.getElementById('phase').textContent = text;
  document.body.dataset.phase = text;
}

async function start() {
  const locale = await (await fetch('/locales/en/translation.json')).json();
  document.getElementById('title').textContent = locale.APP_TITLE;
  await xhr('GET', '/api/options/config');
  const config = await xhr('GET', '/api/options/config');
  if (!config.data || config.data.APP_MODE !== 'oss' || typeof config.data.FEATURE_FLAGS !== 'object') return phase('config unusable');
  const settings = await xhr('GET', '/api/settings');
  const conversations = xhr('GET', '/api/conversations?limit=10');
  if (settings.status === 404) {
    await xhr('GET', '/api/options/models');
    await xhr('GET', '/api/options/agents');
    await xhr('GET', '/api/options/security-analyzers');
  }
  await conversations;
  const providers = settings.status === 200 ? Object.keys(settings.data.provider_tokens_set || {}) : [];
  if (providers.length > 0) {
    await Promise.all([xhr('GET', '/api/user/info'), xhr('GET', '/api/user/suggested-tasks')]);
    if (providers.length === 1) {
      const p = providers[0];
      const repos = await xhr('GET', '/api/user/repositories?selected_provider=' + p + '&sort=pushed&page=1&per_page=30');
      if (Array.isArray(repos.data) && repos.data[0]) {
        await xhr('GET', '/api/user/repository/branches?repository=' + encodeURIComponent(repos.data[0].full_name) + '&page=1&per_page=30');
      }
    }
  }
  document.getElementById('save').disabled = false;
  phase('ready');
}

document.getElementById('save').addEventListener('click', async () => {
  phase('saving');
  await xhr('POST', '/api/settings', {
    language: 'en',
    agent: 'CodeActAgent',
    llm_model: 'openhands/claude-sonnet-4-20250514',
    llm_api_key: 'sk-from-the-settings-modal',
    llm_base_url: '',
    confirmation_mode: false,
    security_analyzer: 'llm',
    enable_default_condenser: true,
    user_consents_to_analytics: false,
  });
  await xhr('GET', '/api/settings');
  phase('saved');
});

start().catch((error) => phase('crashed: ' + error));
`;

/** Writes the fixture build into a new temporary folder (optionally under client/, as React Router lays it out). */
export function writeFixtureUi(layout: 'flat' | 'react-router' = 'flat'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-fixture-ui-'));
  const root = layout === 'react-router' ? path.join(dir, 'client') : dir;
  const files: Record<string, string> = {
    'index.html': INDEX_HTML,
    [ENTRY_SCRIPT]: ENTRY,
    [STYLESHEET]: STYLE,
    'locales/en/translation.json': JSON.stringify(LOCALE),
    'favicon.ico': 'icon',
  };
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return dir;
}
