import 'reflect-metadata';
import { runServiceMain } from '#service-kit';
import { placementService } from './placement.service.js';

await runServiceMain(placementService);
