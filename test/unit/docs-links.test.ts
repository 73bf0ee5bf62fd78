// The documentation points only at things in this repository: every relative link in README.md,
// docs/ and the example app's README resolves to a file (and to a heading, when it names one),
// every repository path written in inline code exists, and nothing cites a file outside the
// repository (the shared notes the project was started from are not part of it).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/processes.js';

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(rel);
    return entry.name.endsWith('.md') ? [rel] : [];
  });
}

const DOCS = ['README.md', ...markdownFiles('docs'), 'examples/nextjs/README.md'];

/** Source, script and manifest files under a folder (comments must not cite outside the repository either). */
function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sourceFiles(rel);
    return /\.(ts|mjs|sh|ya?ml|py)$/.test(entry.name) ? [rel] : [];
  });
}
const text = (file: string) => fs.readFileSync(path.join(PACKAGE_ROOT, file), 'utf8');

/** The lines of a markdown text outside fenced code blocks. */
function prose(source: string): string[] {
  let fenced = false;
  return source.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(source: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(source)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Inline links [text](target) of the prose, inline code removed first. */
function linksOf(source: string): string[] {
  return prose(source).flatMap((line) => [...line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!));
}

const TOP_FOLDERS = /^(src|routers|models|contract|client|examples|test|scripts|bench|docs|k8s)\//;
/** Paths the build or a run writes, not the repository. */
const GENERATED = /(^|\/)(dist|node_modules|\.next|test-results)(\/|$)/;

/** Repository paths written as inline code in the prose, without placeholders or globs. */
function codePathsOf(source: string): string[] {
  return prose(source).flatMap((line) =>
    [...line.matchAll(/`([^`\s]+)`/g)]
      .map((m) => m[1]!.replace(/[.,;:]$/, ''))
      .filter((p) => TOP_FOLDERS.test(p) && !/[<>{}*…|]/.test(p) && !GENERATED.test(p)),
  );
}

const exists = (rel: string) => fs.existsSync(path.join(PACKAGE_ROOT, rel));

describe('documentation links', () => {
  it('finds the documents (the checks below can fail)', () => {
    expect(DOCS).toContain('docs/architecture.md');
    expect(DOCS.some((f) => f.startsWith('docs/decisions/'))).toBe(true);
    expect(DOCS.flatMap((f) => linksOf(text(f))).length).toBeGreaterThan(50);
  });

  it('resolves every relative link to a file of the repository, and its anchor to a heading', () => {
    const broken = DOCS.flatMap((file) =>
      linksOf(text(file)).flatMap((link) => {
        if (/^[a-z][a-z+.-]*:/i.test(link)) return []; // https:, mailto:
        const [target = '', anchor] = link.split('#');
        const resolved = target ? path.posix.normalize(path.posix.join(path.posix.dirname(file), target)) : file;
        if (resolved.startsWith('..')) return [`${file}: ${link} (outside the repository)`];
        if (!exists(resolved)) return [`${file}: ${link} (no such file)`];
        if (anchor === undefined || !resolved.endsWith('.md')) return [];
        return anchorsOf(text(resolved)).has(anchor) ? [] : [`${file}: ${link} (no such heading)`];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('names only repository paths that exist', () => {
    const missing = DOCS.flatMap((file) =>
      codePathsOf(text(file))
        .filter((p) => !exists(p))
        .map((p) => `${file}: ${p}`),
    );
    expect(missing).toEqual([]);
  });

  it('cites nothing outside the repository, in the docs or the code', () => {
    const outside = /\.\.\/shared\/|\/work\/|\b(API|FRONTEND|CLIENTS-2026|INFRA|STYLE)\.md\b/;
    const code = ['src', 'routers', 'models', 'contract', 'scripts', 'bench', 'client/src', 'k8s'].flatMap((dir) => sourceFiles(dir));
    const citing = [...DOCS, ...code].flatMap((file) =>
      text(file)
        .split('\n')
        .flatMap((line, i) => (outside.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(citing).toEqual([]);
  });
});
