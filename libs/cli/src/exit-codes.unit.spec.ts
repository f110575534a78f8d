import { ValidationError } from '#errors';
import { ClientConfigError, GpunetApiError, GpunetProtocolError, GpunetUnreachableError, JobFileError, WaitTimeoutError } from '#sdk';
import { CommanderError } from 'commander';
import { LocalNetworkError, StateFileError, UsageError } from './errors.js';
import { EXIT, exitCodeForError, exitCodeForState } from './exit-codes.js';

describe('exit codes', () => {
  it('0 only for a completed job; every other end is 1', () => {
    expect(exitCodeForState('completed')).toBe(0);
    for (const state of ['failed', 'timeout', 'cancelled', 'node_lost', 'deadline', 'rejected']) expect(exitCodeForState(state)).toBe(EXIT.failure);
  });

  it('2 for what the caller must change: usage, spec, auth, permissions, unknown job, conflicts', () => {
    const usage = [
      new UsageError('bad flag'),
      new StateFileError('/x/state.json', 'broken'),
      new JobFileError('bad spec', [{ path: 'request.gpus', message: 'must be ≥ 1' }]),
      new ClientConfigError('natsUrl', 'no NATS URL'),
      new GpunetApiError(400, 'validation_failed', 'bad spec'),
      new GpunetApiError(401, 'unauthorized', 'no key'),
      new GpunetApiError(403, 'forbidden', 'other team'),
      new GpunetApiError(404, 'not_found', 'no such job'),
      new GpunetApiError(409, 'idempotency_conflict', 'other spec under the same key'),
      new CommanderError(1, 'commander.unknownOption', 'unknown option'),
    ];
    expect(usage.map(exitCodeForError)).toEqual(usage.map(() => EXIT.usage));
  });

  it('3 when the network does not answer, or answers that it cannot', () => {
    expect(exitCodeForError(new GpunetUnreachableError('http://127.0.0.1:1', 'refused'))).toBe(EXIT.unreachable);
    for (const status of [502, 503, 504]) expect(exitCodeForError(new GpunetApiError(status, 'transient', 'bus down'))).toBe(EXIT.unreachable);
  });

  it('1 for everything else: server faults, protocol mismatches, timeouts, local start-up failures, unknown errors', () => {
    const failures = [
      new GpunetApiError(500, 'internal', 'internal error'),
      new GpunetProtocolError('not the contract'),
      new WaitTimeoutError('job_1', 1000, 'running'),
      new LocalNetworkError('intake exited'),
      new ValidationError('from somewhere else'),
      new Error('boom'),
      'a string',
    ];
    expect(failures.map(exitCodeForError)).toEqual(failures.map(() => EXIT.failure));
  });
});
