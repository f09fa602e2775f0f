// Public entry point of the Pterodactyl panel simulator.
export { startPanelSim } from './server.ts';
export type { PanelSim, PanelSimOptions, SimServerView } from './server.ts';
export type { FaultEffect, FaultRule, FaultRuleJson } from './faults.ts';
export type { Refusal } from './pelican.ts';
export { DEFAULT_APP_KEY, DEFAULT_CLIENT_KEY, SEED_IDS } from './seed.ts';
export type { PowerState, PowerSignal } from './wings.ts';
