// The shell text that prepares a conversation's workspace inside the sandbox: clone with a
// one-shot credential helper, checkout, git identity, the repository's setup script and its
// pre-commit hook. Every value is single-quoted for sh.

/** Single-quotes a value for sh. */
export function sh(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export const makeDir = (dir: string) => `mkdir -p ${sh(dir)}`;

/** An empty workspace is a git repository too (idempotent), trusted by git whoever owns it. */
export const gitInit = (dir: string) =>
  `git rev-parse --git-dir >/dev/null 2>&1 || git init -q; git config --global --add safe.directory ${sh(dir)}`;

const EMPTY_WORKSPACE_STEPS = ['Could not create the working directory', 'git init failed', 'Could not set the git identity'];

/**
 * A workspace without a repository in one command: the directory, a git repository in it
 * (gitInit) and the identity if any, in a subshell; a failed step exits 101, 102 or 103.
 */
export function prepareEmptyWorkspace(dir: string, identity: string | null): string {
  const steps = [`${makeDir(dir)} && cd ${sh(dir)} || exit 101`, `{ ${gitInit(dir)}; } || exit 102`];
  if (identity) steps.push(`{ ${identity}; } || exit 103`);
  return `(\n${steps.join('\n')}\n)`;
}

/** What failed, from prepareEmptyWorkspace's exit code. */
export const emptyWorkspaceFailure = (exitCode: number) => EMPTY_WORKSPACE_STEPS[exitCode - 101] ?? 'Could not prepare the workspace';

/** Where a repository is cloned: its name under the working directory. */
export function projectDirOf(workingDir: string, repository: string): string {
  return `${workingDir.replace(/\/+$/, '')}/${repository.split('/').pop()}`;
}

/** The helper file lives beside the working directory (inside the sandbox's private area), not in a shared /tmp. */
export function credentialHelperPath(workingDir: string, taskId: string): string {
  const base = workingDir.replace(/\/+$/, '');
  return `${base.slice(0, base.lastIndexOf('/')) || '/tmp'}/.git-credential-${taskId}`;
}

export const isCloned = (projectDir: string) => `test -d ${sh(projectDir)}/.git`;

/** A git credential helper that answers these credentials (uploaded as a file, never a command line). */
export const credentialHelper = (username: string, password: string) => `#!/bin/sh\necho username=${username}\necho password=${password}\n`;

/** Clones with only the given helper (no other configured helper sees the token); the remote URL stays token-free. */
export const cloneWithHelper = (helper: string, cloneUrl: string, projectDir: string) =>
  `chmod 700 ${sh(helper)} && GIT_TERMINAL_PROMPT=0 git -c credential.helper= -c credential.helper=${sh(helper)} clone -q ${sh(cloneUrl)} ${sh(projectDir)}`;

export const removeFile = (file: string) => `rm -f ${sh(file)}`;

/** The requested branch (local, else from origin), or this task's own workspace branch. */
export function checkout(branch: string | null | undefined, taskId: string): string {
  if (branch) return `git checkout -q ${sh(branch)} 2>/dev/null || git checkout -q -b ${sh(branch)} origin/${sh(branch)}`;
  const workspaceBranch = `openhands-workspace-${taskId.slice(0, 8)}`;
  return `git rev-parse -q --verify refs/heads/${workspaceBranch} >/dev/null && git checkout -q ${workspaceBranch} || git checkout -q -b ${workspaceBranch}`;
}

/** git config for the user's name and email; null when neither is set. */
export function gitIdentity(name: string | null, email: string | null): string | null {
  const commands = [name ? `git config user.name ${sh(name)}` : null, email ? `git config user.email ${sh(email)}` : null].filter(Boolean);
  return commands.length ? commands.join(' && ') : null;
}

/** Runs the repository's .openhands/setup.sh, if any, in the current shell. */
export const SETUP_SCRIPT = `if [ -f .openhands/setup.sh ]; then chmod +x .openhands/setup.sh && . ./.openhands/setup.sh; fi`;

/**
 * Installs a pre-commit hook that runs .openhands/pre-commit.sh, keeping an existing hook
 * that is not ours as pre-commit.local (run afterwards), as the reference does.
 */
export const INSTALL_PRE_COMMIT_HOOK = `
if [ -f .openhands/pre-commit.sh ] && [ -d .git ]; then
  mkdir -p .git/hooks
  if [ -f .git/hooks/pre-commit ] && ! grep -q 'openhands-managed-hook' .git/hooks/pre-commit; then
    mv .git/hooks/pre-commit .git/hooks/pre-commit.local
  fi
  cat > .git/hooks/pre-commit <<'HOOK'
#!/bin/sh
# openhands-managed-hook
sh .openhands/pre-commit.sh || exit $?
if [ -x .git/hooks/pre-commit.local ]; then .git/hooks/pre-commit.local || exit $?; fi
HOOK
  chmod +x .git/hooks/pre-commit .openhands/pre-commit.sh
fi
`;

const IGNORED_MARKER = '--acp-ignored-entries--';

/**
 * Lists a directory's entries one per line (directories with a trailing "/"), then, after a
 * marker, those git ignores there (.gitignore of the repository the directory is in). A
 * missing directory lists nothing.
 */
export const listEntries = (dir: string) =>
  `cd -- ${sh(dir)} 2>/dev/null || exit 0
entries=$(ls -A -p -1)
[ -n "$entries" ] && printf '%s\\n' "$entries"
echo ${IGNORED_MARKER}
[ -n "$entries" ] && printf '%s\\n' "$entries" | git check-ignore --stdin 2>/dev/null
exit 0`;

export function parseListing(stdout: string): { entries: string[]; ignored: Set<string> } {
  const [listed = '', ignored = ''] = stdout.split(`${IGNORED_MARKER}\n`);
  const lines = (text: string) => text.split('\n').filter((line) => line.length > 0);
  return { entries: lines(listed), ignored: new Set(lines(ignored)) };
}
