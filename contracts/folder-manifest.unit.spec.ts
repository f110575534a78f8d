import { createHash } from 'node:crypto';
import { FolderManifest, encodeFolderManifest, formatIssues } from './index.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

describe('folder manifest', () => {
  it('encodes the same folder to the same bytes whatever the listing order', () => {
    const one = encodeFolderManifest([
      { path: 'z.txt', sha256: A, size: 1 },
      { path: 'dir/run.sh', sha256: B, size: 2, executable: true },
      { path: 'dir/\u{1F600}.bin', sha256: A, size: 1 },
      { path: 'dir/\uFF5E.bin', sha256: B, size: 3, executable: false },
    ]);
    const two = encodeFolderManifest([
      { path: 'dir/\uFF5E.bin', sha256: B, size: 3 },
      { path: 'dir/\u{1F600}.bin', sha256: A, size: 1 },
      { path: 'z.txt', sha256: A, size: 1 },
      { path: 'dir/run.sh', sha256: B, size: 2, executable: true },
    ]);
    expect(one).toBe(two);
    // Code point order (as UTF-8 bytes sort): U+FF5E before U+1F600, although UTF-16 units say otherwise.
    expect((JSON.parse(one) as FolderManifest).entries.map((e) => e.path)).toEqual(['dir/run.sh', 'dir/\uFF5E.bin', 'dir/\u{1F600}.bin', 'z.txt']);
    expect(one).toBe(
      `{"format":"gpunet.folder/1","entries":[{"path":"dir/run.sh","sha256":"${B}","size":2,"executable":true},` +
        `{"path":"dir/\uFF5E.bin","sha256":"${B}","size":3},{"path":"dir/\u{1F600}.bin","sha256":"${A}","size":1},` +
        `{"path":"z.txt","sha256":"${A}","size":1}]}`,
    );
    expect(createHash('sha256').update(one).digest('hex')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a path listed twice and paths that climb out or are not files', () => {
    const result = FolderManifest.safeParse({
      format: 'gpunet.folder/1',
      entries: [
        { path: 'a', sha256: A, size: 1 },
        { path: 'a', sha256: B, size: 1 },
        { path: '../etc/passwd', sha256: A, size: 1 },
        { path: 'dir/', sha256: A, size: 1 },
        { path: '/abs', sha256: A, size: 1 },
        { path: 'a//b', sha256: A, size: 1 },
      ],
    });
    expect(result.success).toBe(false);
    expect(formatIssues(result.error!).map((i) => i.path)).toEqual([
      'entries[2].path',
      'entries[3].path',
      'entries[4].path',
      'entries[5].path',
      'entries[1].path',
    ]);
    expect(() => encodeFolderManifest([{ path: '../x', sha256: A, size: 1 }])).toThrow();
  });
});
