/**
 * Events of single-writer parts that run as a leader and standbys (decision 0029): the store
 * records each term, and every append of the term is fenced on it.
 */
import { z } from 'zod';
import { defineEvent } from '../message.js';
import { DurationMs, Timestamp } from '../primitives.js';

/** A single-writer role: a service (`placement`, `storage`), a part of one (`recorder`), or one partition of a partitioned service (`ledger-p0`). */
export const LeaderRole = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}$/, 'a role is lower-case letters, digits and -, starting with a letter (e.g. placement, recorder, ledger-p0)');

export const LeaderElected = z.object({
  role: LeaderRole.describe('The single-writer role taken over: a service (`placement`, `storage`), the execution recorder (`recorder`), or one event partition of the ledger (`ledger`, `ledger-p<i>`). Also the lease key in NATS KV `gpunet-leases`.'),
  holder: z.string().min(1).max(200).describe('The process that holds the lease: instance, host and process id, for people and logs.'),
  term: z.int().min(1).describe('1 for the role\'s first leader, one more for each election after: the revision of this event in `leadership-<role>` plus one.'),
  leaseMs: DurationMs.min(1).describe('How long the holder\'s NATS KV lease lasts without renewal: a standby takes over at most about this long after the holder dies.'),
  electedAt: Timestamp.describe('Holder clock: when it won the lease.'),
});
export type LeaderElected = z.output<typeof LeaderElected>;

export const leadershipEvents = [
  defineEvent({
    name: 'LeaderElected',
    version: 1,
    producers: ['placement', 'storage', 'ledger', 'execution'],
    description:
      'A process won the lease of a single-writer role (stream `leadership-<role>`). Every event it appends afterwards is fenced on this event\'s revision, so an earlier holder that wakes up cannot append any more.',
    schema: LeaderElected,
  }),
] as const;
