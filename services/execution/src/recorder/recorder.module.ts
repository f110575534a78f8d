import { Module } from '@nestjs/common';
import { NodeRegistry } from './node-registry.service.js';
import { ReportsService } from './reports.service.js';
import { WorkDispatcher } from './work-dispatcher.service.js';

/** The execution service's recorder: nodes' reports in, judged, recorded; each node's work out. */
@Module({ providers: [NodeRegistry, WorkDispatcher, ReportsService] })
export class RecorderModule {}
