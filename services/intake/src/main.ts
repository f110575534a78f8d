import 'reflect-metadata';
import { runService } from '#service-kit';
import { intakeService } from './intake.service.js';

await runService(intakeService());
