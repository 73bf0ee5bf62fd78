// Repository microagents: where they live, which files count, and how one file reads
// (optional YAML front matter with `triggers`, then the body).
import YAML from 'yaml';
import type { RepositoryFile } from './provider-client.js';

/** "domain/owner/repo" → "owner/repo" (a leading segment with a dot names the host, reference). */
export function withoutDomain(repository: string): string {
  const parts = repository.split('/');
  return parts.length >= 3 && parts[0]!.includes('.') ? parts.slice(1).join('/') : repository;
}

/** A repository named .openhands or openhands-config keeps them in microagents/; others in .openhands/microagents/. */
export function microagentsDir(repository: string): string {
  const name = repository.split('/').pop();
  return name === '.openhands' || name === 'openhands-config' ? 'microagents' : '.openhands/microagents';
}

export const isMicroagentFile = (file: RepositoryFile) => file.name.endsWith('.md') && file.name !== 'README.md';

export function parseMicroagent(text: string): { content: string; triggers: string[] } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match) return { content: text, triggers: [] };
  let meta: unknown;
  try {
    meta = YAML.parse(match[1]!);
  } catch {
    meta = null; // unreadable front matter: the body still reads
  }
  const triggers = (meta as { triggers?: unknown } | null)?.triggers;
  return {
    content: text.slice(match[0].length),
    triggers: Array.isArray(triggers) ? triggers.filter((t): t is string => typeof t === 'string') : [],
  };
}
