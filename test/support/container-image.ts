/**
 * A small container image built on this machine with no registry: a root file system of the
 * static busybox (Debian's `busybox-static`, installed by `npm test`'s prerequisites) and its
 * applet links, tarred and `podman import`ed. Built once per test run: the tag names the
 * busybox binary's sha256, so every spec file and worker of a run (and later runs) finds it.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile, copyFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The static busybox `ensure_podman` installs. */
export const BUSYBOX = '/bin/busybox';

/** A locally built image: its reference (for a job's `work.image`) and the id podman resolves it to. */
export interface TestImage {
  readonly ref: string;
  readonly id: string;
}

let cached: Promise<TestImage> | undefined;

/** The busybox image of this test run, built on first use (`podman image exists` first, so only once per machine and busybox). */
export function busyboxImage(): Promise<TestImage> {
  cached ??= build();
  return cached;
}

async function build(): Promise<TestImage> {
  const bin = await readFile(BUSYBOX).catch(() => {
    throw new Error(`${BUSYBOX} is missing: install Debian's busybox-static (npm test does so as root: apt-get install -y busybox-static)`);
  });
  const tag = createHash('sha256').update(bin).digest('hex').slice(0, 16);
  const ref = `localhost/gpunet-test-busybox:${tag}`;
  const exists = await run('podman', ['image', 'exists', ref]).then(
    () => true,
    () => false,
  );
  if (!exists) {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-image-'));
    try {
      const root = join(dir, 'root');
      for (const d of ['bin', 'tmp', 'etc', 'proc', 'sys', 'dev', 'run', 'var/tmp']) await mkdir(join(root, d), { recursive: true });
      await chmod(join(root, 'tmp'), 0o1777);
      await chmod(join(root, 'var/tmp'), 0o1777);
      await copyFile(BUSYBOX, join(root, 'bin/busybox'));
      await chmod(join(root, 'bin/busybox'), 0o755);
      const { stdout } = await run(BUSYBOX, ['--list']);
      for (const applet of stdout.split('\n').map((l) => l.trim())) {
        if (applet !== '' && applet !== 'busybox' && /^[\w.[-]+$/.test(applet)) await symlink('busybox', join(root, 'bin', applet));
      }
      await writeFile(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
      await writeFile(join(root, 'etc/group'), 'root:x:0:\n');
      const tar = join(dir, 'rootfs.tar');
      await run('tar', ['-C', root, '-cf', tar, '.']);
      await run('podman', ['import', '--change', 'CMD ["/bin/sh"]', '--change', 'ENV PATH=/bin', tar, ref], { maxBuffer: 16 * 1024 * 1024 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const { stdout } = await run('podman', ['image', 'inspect', '--format', '{{.Id}}', ref]);
  return { ref, id: `sha256:${stdout.trim().replace(/^sha256:/, '')}` };
}
