import 'reflect-metadata';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { PLACEMENT_EVENT_TYPES } from '../domain/evolve.js';
import { SchedulerController } from './scheduler.controller.js';

/** The event types the controller's handlers are bound to, read from Nest's decorator metadata. */
function boundTypes(): string[] {
  const proto = SchedulerController.prototype as unknown as Record<string, unknown>;
  return Object.getOwnPropertyNames(proto).flatMap((name) => {
    const handler = proto[name];
    if (typeof handler !== 'function') return [];
    return ((Reflect.getMetadata(PATTERN_METADATA, handler) as unknown[] | undefined) ?? []).map(String);
  });
}

describe('SchedulerController', () => {
  // The fold at start-up reads PLACEMENT_EVENT_TYPES from the store and the live consumer is bound
  // by these decorators: a type in one and not the other would make a restarted placement see a
  // different history than a running one.
  it('handles exactly the event types placement folds, each once', () => {
    const bound = boundTypes();
    expect(new Set(bound).size).toBe(bound.length);
    expect([...bound].sort()).toEqual([...PLACEMENT_EVENT_TYPES].sort());
  });
});
