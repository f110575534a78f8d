import { access, constants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import type { FieldIssue } from '#errors';

/**
 * POSIX resource limits applied to a run through util-linux `prlimit`, which sets them on
 * itself and then executes the job (same pid, so the process group is unchanged). Each limit is
 * set as both soft and hard, so the job cannot raise it again. All optional; integers.
 */
export interface ResourceLimits {
  /**
   * RLIMIT_NPROC. Counts every process of the job's *user*, not only this run's, and is not
   * enforced for root; meaningful once jobs run as their own unprivileged user.
   */
  readonly maxProcesses?: number;
  /**
   * RLIMIT_AS in bytes (virtual address space). CUDA reserves very large virtual ranges, so do
   * not set this for GPU jobs; it is a memory guard for CPU slots. Real memory caps need cgroups.
   */
  readonly maxAddressSpaceBytes?: number;
  /** RLIMIT_NOFILE: highest open file descriptor number + 1. */
  readonly maxOpenFiles?: number;
  /** RLIMIT_FSIZE in bytes: largest file the job may write (it gets SIGXFSZ beyond it). */
  readonly maxFileSizeBytes?: number;
  /** RLIMIT_CORE in bytes; 0 disables core dumps, which can be as large as the job's memory. */
  readonly maxCoreFileBytes?: number;
}

const FLAGS: Record<keyof ResourceLimits, string> = {
  maxProcesses: 'nproc',
  maxAddressSpaceBytes: 'as',
  maxOpenFiles: 'nofile',
  maxFileSizeBytes: 'fsize',
  maxCoreFileBytes: 'core',
};

/** Whether any limit is set. */
export function hasLimits(limits: ResourceLimits | undefined): limits is ResourceLimits {
  return limits !== undefined && Object.values(limits).some((v) => v !== undefined);
}

/** Smallest usable value per limit, and why. */
const MINIMUM: Partial<Record<keyof ResourceLimits, [number, string]>> = {
  maxProcesses: [1, 'the job itself is a process'],
  maxOpenFiles: [4, 'stdin, stdout, stderr and one more'],
};

/** Problems with a limits object, one per field; empty when usable. */
export function limitIssues(limits: ResourceLimits | undefined, field = 'limits'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [key, value] of Object.entries(limits ?? {})) {
    const path = `${field}.${key}`;
    if (!(key in FLAGS)) {
      issues.push({ path, message: 'is not a known limit', fix: `use one of ${Object.keys(FLAGS).join(', ')}` });
      continue;
    }
    if (value === undefined) continue;
    const [min, why] = MINIMUM[key as keyof ResourceLimits] ?? [0, ''];
    if (!Number.isSafeInteger(value) || (value as number) < min) {
      issues.push({ path, message: `must be an integer of at least ${min}`, ...(why && { fix: why }) });
    }
  }
  return issues;
}

/**
 * The limits that are set, by their resource name as `prlimit` and `gpunet-confine` spell it
 * (`nproc`, `as`, `nofile`, `fsize`, `core`), in one fixed order. Pure.
 */
export function setLimits(limits: ResourceLimits | undefined): [resource: string, value: number][] {
  const set: [string, number][] = [];
  for (const key of Object.keys(FLAGS) as (keyof ResourceLimits)[]) {
    const value = limits?.[key];
    if (value !== undefined) set.push([FLAGS[key], value]);
  }
  return set;
}

/** The `prlimit` options for `limits`, e.g. `['--nofile=64:64']`. Pure. */
export function prlimitArgs(limits: ResourceLimits): string[] {
  return setLimits(limits).map(([resource, value]) => `--${resource}=${value}:${value}`);
}

/** Looks `name` up like a shell would on `pathVar`; absolute names are checked directly. `null` when absent. */
export async function findExecutable(name: string, pathVar: string | undefined): Promise<string | null> {
  const candidates = isAbsolute(name) ? [name] : (pathVar ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
