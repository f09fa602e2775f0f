import * as z from 'zod';
import { EggVariables, text } from './common.ts';

/** A server's startup settings: its egg variables as the customer may see them and its docker image (servers group). */

export const StartupVariable = z
  .object({
    env: text(191).meta({ example: 'SERVER_JARFILE' }),
    name: text(191).meta({ example: 'Server Jar File' }),
    description: text(65_535).meta({ example: 'The name of the server jarfile to run the server with.' }),
    value: text(65_535).meta({ description: 'The value the server starts with (its own, else the default).', example: 'server.jar' }),
    default: text(65_535).nullable().meta({ example: 'server.jar' }),
    rules: text(65_535).meta({
      description: 'Laravel validation rules a new value must pass.',
      example: 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/',
    }),
    editable: z.boolean(),
  })
  .meta({ id: 'StartupVariable' });

export const ServerStartup = z
  .object({
    variables: z.array(StartupVariable).max(100).meta({ description: "The egg's variables the panel lets users see." }),
    dockerImage: text(1024),
    dockerImages: z.record(text(191), text(1024)).meta({
      description: "The egg's images (display name to image): the choices.",
      example: { 'Java 21': 'ghcr.io/pterodactyl/yolks:java_21', 'Java 17': 'ghcr.io/pterodactyl/yolks:java_17' },
    }),
    startup: text(65_535).meta({ description: 'The startup command ({{VAR}} placeholders); read-only.' }),
  })
  .meta({ id: 'ServerStartup' });

export const UpdateStartup = z
  .object({
    // First: the access matrix and the fuzzer build a probe body from a schema's first property.
    dockerImage: z.string().trim().min(1).max(191).optional(),
    variables: EggVariables.optional().meta({
      description: 'Variable to new value; only editable ones; the others keep theirs.',
      example: { SERVER_JARFILE: 'paper.jar' },
    }),
  })
  .strict()
  .refine((v) => v.dockerImage !== undefined || Object.keys(v.variables ?? {}).length > 0, 'give variables or dockerImage')
  .meta({ id: 'UpdateStartup' });

export const StartupUpdated = ServerStartup.extend({
  changed: z
    .array(text(191))
    .max(101)
    .meta({ description: 'Variables whose value changed, and `dockerImage` if it did.', example: ['SERVER_JARFILE'] }),
  appliesAt: z.literal('next_start').meta({ description: 'Wings reads the new settings when the server next starts.' }),
}).meta({ id: 'StartupUpdated' });
