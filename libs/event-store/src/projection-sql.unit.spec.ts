import { describe, expect, it } from '@jest/globals';
import { checkpointOf, isAnotherDerivation, postgresProjectionDialect, projectionSql, rowValues, SQLITE_PROJECTION_DIALECT } from './projection-sql.js';
import { projectionLayout, type ProjectionTableSpec } from './projection-table.js';
import { THINGS } from './projection-table.fixtures.js';

const SPEC: ProjectionTableSpec = { ...THINGS, version: 2 };
const positional = SQLITE_PROJECTION_DIALECT;
const numbered = postgresProjectionDialect('s');
const oneLine = (sql: string) => sql.replace(/\s+/g, ' ');

describe('projection SQL', () => {
  it('names each parameter once per statement, so positional parameters line up with the values', () => {
    for (const d of [positional, numbered]) {
      const sql = projectionSql(SPEC, d);
      const count = (text: string) => (d === positional ? (text.match(/\?/g) ?? []).length : new Set(text.match(/\$\d+/g) ?? []).size);
      expect(count(sql.advance)).toBe(5);
      expect(count(sql.rewind)).toBe(2);
      expect(count(sql.insertPosition)).toBe(3);
      expect(count(sql.upsert(3))).toBe(3 * sql.columns.length);
      const q = sql.query({ where: [{ column: 'team', op: '=', value: 't' }, { column: 'at_ms', op: 'not null' }, { column: 'at_ms', op: '>=', value: 5 }], orderBy: ['at_ms', 'key'], limit: 7 });
      expect(count(q.count)).toBe(q.countParams.length);
      expect(count(q.rows)).toBe(q.rowsParams.length);
      expect(q.rowsParams).toEqual(['t', 5, 7, 0]);
    }
  });

  it('spells a list and a count per value in each dialect, the list as one parameter', () => {
    const query = { where: [{ column: 'team', op: 'in' as const, values: ['a', 'b'] }, { column: 'at_ms', op: 'in' as const, values: [1, 2] }], countBy: 'team' };
    const pg = projectionSql(SPEC, numbered).query(query);
    expect(pg.count).toBe('SELECT count(*) AS n FROM s.projection_things WHERE team COLLATE "C" = ANY ($1::text[]) AND at_ms = ANY ($2::bigint[])');
    expect(pg.countParams).toEqual([['a', 'b'], ['1', '2']]);
    expect(pg.countBy).toBe('SELECT team AS value, count(*) AS n FROM s.projection_things WHERE team COLLATE "C" = ANY ($1::text[]) AND at_ms = ANY ($2::bigint[]) GROUP BY team');
    const lite = projectionSql(SPEC, positional).query(query);
    expect(lite.count).toBe('SELECT count(*) AS n FROM projection_things WHERE team IN (SELECT value FROM json_each(?)) AND at_ms IN (SELECT value FROM json_each(?))');
    expect(lite.countParams).toEqual(['["a","b"]', '[1,2]']);
    expect(projectionSql(SPEC, positional).query({}).countBy).toBeUndefined();
  });

  it('spells the dialect: prefix, types, byte-wise text order, no limit', () => {
    const pg = projectionSql(SPEC, numbered);
    expect(pg.createTable).toBe('CREATE TABLE IF NOT EXISTS s.projection_things (key text PRIMARY KEY, doc text NOT NULL, team text, at_ms bigint)');
    expect(pg.createIndexes).toEqual(['CREATE INDEX IF NOT EXISTS projection_things_ix0 ON s.projection_things (team COLLATE "C", at_ms, key COLLATE "C")']);
    const q = pg.query({ where: [{ column: 'team', op: '<', value: 'x' }], orderBy: ['team', 'key'] });
    expect(q.rows).toBe('SELECT key, doc FROM s.projection_things WHERE team COLLATE "C" < $1 ORDER BY team COLLATE "C", key COLLATE "C" LIMIT $2 OFFSET $3');
    expect(q.rowsParams).toEqual(['x', null, 0]);
    const lite = projectionSql(SPEC, positional);
    expect(lite.createTable).toBe('CREATE TABLE IF NOT EXISTS projection_things (key TEXT NOT NULL UNIQUE, doc TEXT NOT NULL, team TEXT, at_ms INTEGER)');
    expect(oneLine(lite.upsert(1))).toBe('INSERT INTO projection_things (key, doc, team, at_ms) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET doc = excluded.doc, team = excluded.team, at_ms = excluded.at_ms');
    expect(lite.query({}).rowsParams).toEqual([-1, 0]);
  });

  it('a row\'s values follow the columns, a missing value as null; a position row of another derivation empties the table', () => {
    expect(rowValues(SPEC, { key: 'k', doc: '{}', values: { at_ms: 3 } })).toEqual(['k', '{}', null, 3]);
    const layout = projectionLayout(SPEC);
    expect(isAnotherDerivation(undefined, SPEC, layout)).toBe(true);
    expect(isAnotherDerivation({ version: 1n, layout }, SPEC, layout)).toBe(true);
    expect(isAnotherDerivation({ version: 2, layout: '{}' }, SPEC, layout)).toBe(true);
    expect(isAnotherDerivation({ version: 2n, layout }, SPEC, layout)).toBe(false);
    expect(checkpointOf(undefined)).toEqual({ position: 0n, eventId: null });
    expect(checkpointOf({ position: '12', event_id: 'e' })).toEqual({ position: 12n, eventId: 'e' });
  });
});
