/**
 * What each role may do. Every key acts within its own team only: a job of another team is
 * forbidden to every role, `admin` included (operators read other teams through the store);
 * the one exception is the audit of a `compliance` key (`audit:read-all-teams`).
 */
import type { CallerPrincipal } from '#contracts';
import { ForbiddenError } from '../common/errors.js';
import type { ApiRole, Principal } from './api-keys.js';

export type Action =
  | 'jobs:submit'
  | 'jobs:cancel'
  | 'jobs:read'
  | 'charges:read'
  | 'audit:read'
  | 'audit:read-all-teams'
  | 'invoices:read'
  | 'prices:read'
  | 'prices:publish'
  | 'ledger:rebuild'
  | 'teams:manage'
  | 'teams:read'
  | 'keys:manage'
  | 'keys:read'
  | 'keys:all-teams'
  | 'quotas:set'
  | 'quotas:read'
  | 'quotas:read-all-teams'
  | 'budgets:read'
  | 'budgets:manage'
  | 'audit:chain'
  | 'nodes:manage';

/**
 * - `producer`: submits, cancels and reads its team's jobs and charges (not its invoices);
 * - `compliance`: reads jobs (state, timeline, logs, outputs) and charges, changes nothing;
 * - `billing`: reads charges and invoices, publishes price lists, sets quotas and budgets;
 * - `admin`: everything within its team, including its team's keys (issuing only roles
 *   {@link TEAM_ADMIN_ISSUABLE}: the others reach beyond one team);
 * - `operator`: the network's: creates and disables teams, issues and revokes every team's keys
 *   with any role (`teams:manage`, `keys:all-teams`), lists, cordons, drains and uncordons the
 *   nodes (`nodes:manage`, decision 0031), and nothing else (no jobs, no charges).
 *
 * Billing: invoices are for the people who settle them (issue 13: "billing role, and a team its
 * own"): `billing`, `admin` and `compliance` read their team's invoices, replay them (a what-if
 * price list included) and download their dispute bundles (`invoices:read`); a `producer` does
 * not (it reads its jobs' charges, `charges:read`). Every role reads the price lists
 * (`prices:read`); only `billing` publishes a price list (`prices:publish`, network-wide, so not
 * `admin`, whose powers stop at its team); `billing` and `admin` may rebuild the ledger's
 * projections (`ledger:rebuild`, which changes no event).
 *
 * Quotas (decision 0027): every role reads its team's GPU quotas (`quotas:read`); only `billing`
 * sets them (`quotas:set`, for any team: they bound what a team takes from the shared network, so
 * a team's own `admin` may not raise them) and reads every team's (`quotas:read-all-teams`).
 * Budgets: every role but `operator` reads its own team's budget (`budgets:read`); only
 * `billing` sets and clears budgets, of any team, and reads any team's (`budgets:manage`,
 * network-wide like price lists).
 *
 * Audit (`audit:read`) is open to every role, within its team; `audit:read-all-teams` is the one
 * cross-team permission: only `compliance` reads every team's audit. The chain's verification
 * status (`audit:chain`: whether the store's history holds, no team's data) is for `compliance`
 * and `billing`, whose answers rest on it.
 */
export const ROLE_ACTIONS: Readonly<Record<ApiRole, readonly Action[]>> = {
  producer: ['jobs:submit', 'jobs:cancel', 'jobs:read', 'charges:read', 'audit:read', 'prices:read', 'quotas:read', 'budgets:read'],
  compliance: ['jobs:read', 'charges:read', 'audit:read', 'audit:read-all-teams', 'invoices:read', 'prices:read', 'quotas:read', 'budgets:read', 'audit:chain'],
  billing: ['charges:read', 'audit:read', 'invoices:read', 'prices:read', 'prices:publish', 'ledger:rebuild', 'quotas:read', 'quotas:set', 'quotas:read-all-teams', 'budgets:read', 'budgets:manage', 'audit:chain'],
  admin: ['jobs:submit', 'jobs:cancel', 'jobs:read', 'charges:read', 'audit:read', 'invoices:read', 'prices:read', 'ledger:rebuild', 'teams:read', 'keys:manage', 'keys:read', 'quotas:read', 'budgets:read'],
  operator: ['prices:read', 'teams:manage', 'teams:read', 'keys:manage', 'keys:read', 'keys:all-teams', 'nodes:manage'],
};

/**
 * Roles an `admin` may issue to its own team. `compliance` reads every team's audit, `billing`
 * publishes network-wide price lists and `operator` manages every team: only an operator issues those.
 */
export const TEAM_ADMIN_ISSUABLE: readonly ApiRole[] = ['producer', 'admin'];

/**
 * Throws ForbiddenError unless the caller may act on `team`'s teams/keys: its own team, or any
 * team with `keys:all-teams` (operator).
 */
export function assertTeamScope(principal: Principal, team: string, what: string): void {
  if (team !== principal.team && !allows(principal, 'keys:all-teams')) {
    throw new ForbiddenError(`API key \`${principal.keyId}\` (role ${principal.role}) acts for team ${principal.team} only and may not ${what} of team ${team}; that needs a key with role operator`);
  }
}

/** Throws ForbiddenError unless the caller's role allows the action. */
export function authorize(principal: Principal, action: Action): void {
  if (!ROLE_ACTIONS[principal.role].includes(action)) {
    const roles = (Object.keys(ROLE_ACTIONS) as ApiRole[]).filter((r) => ROLE_ACTIONS[r].includes(action));
    throw new ForbiddenError(`API key \`${principal.keyId}\` has role ${principal.role}, which may not do ${action}; that needs a key with role ${roles.join(' or ')}`);
  }
}

/** Whether the caller's role allows the action (for permissions that widen a scope rather than gate a route). */
export function allows(principal: Principal, action: Action): boolean {
  return ROLE_ACTIONS[principal.role].includes(action);
}

/** Throws ForbiddenError when the job belongs to another team. */
export function assertOwnJob(principal: Principal, job: { jobId: string; team: string }): void {
  if (job.team !== principal.team) {
    throw new ForbiddenError(`job ${job.jobId} belongs to another team; your API key is for team ${principal.team}`);
  }
}

/**
 * The principal intake sends behind it (`principal` of the ledger's queries and commands): from
 * the authenticated key only, never from a request body. `allTeams` only when the key's role may
 * read every team for this purpose (e.g. `audit:read-all-teams`); default false.
 */
export function callerPrincipal(principal: Principal, allTeams = false): CallerPrincipal {
  return { keyId: principal.keyId, team: principal.team, role: principal.role, allTeams };
}
