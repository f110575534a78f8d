/** A small projection table spec and its rows, for the projection-table specs (unit and int). */
import type { ProjectionRow, ProjectionTableSpec } from './projection-table.js';

/** Things by team and time: one text column, one integer column, an index over both and the key. */
export const THINGS: ProjectionTableSpec = {
  name: 'things',
  version: 1,
  columns: [
    { name: 'team', type: 'text' },
    { name: 'at_ms', type: 'integer' },
  ],
  indexes: [['team', 'at_ms', 'key']],
};

/** A row of THINGS (its document names its key unless given). */
export const thing = (key: string, team: string | null, atMs: number | null, doc = `{"key":"${key}"}`): ProjectionRow => ({ key, doc, values: { team, at_ms: atMs } });
