import 'reflect-metadata';
import { runServiceMain } from '#service-kit';
import { ledgerService } from './ledger.definition.js';

await runServiceMain(ledgerService);
