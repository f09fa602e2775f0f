import * as z from 'zod';
import { Count, Uuid, int32, text } from './common.ts';

/**
 * Server databases on the panel's database hosts (shared/servers/databases.ts). The name and remote
 * rules mirror the panel's (StoreDatabaseRequest, Database::$validationRules), so what the panel
 * would refuse is our 400 before any call. A database's id is the panel's (its hashid).
 */

/**
 * The panel's rule is Laravel's alpha_dash, 3 to 48 characters; we take its ASCII part (letters,
 * digits, `-`, `_`): a pattern the OpenAPI document can state, and a name every MySQL client types.
 */
export const DatabaseName = z
  .string()
  .min(3)
  .max(48)
  .regex(/^[A-Za-z0-9_-]+$/, 'Letters, digits, dashes and underscores only')
  .meta({
    description:
      'Letters, digits, `-` and `_`, 3 to 48 characters. The panel stores it as `s{panel server id}_` + the name, cut to 48 characters, unique per server.',
    example: 'plugins',
  });

/** Where the database user may connect from (MySQL host pattern): `%` is anywhere. */
export const DatabaseRemote = z
  .string()
  .min(1)
  .max(191)
  .regex(/^[\w\-/.%:]+$/, 'Letters, digits and - _ / . % : only')
  .meta({ description: 'Where connections may come from, as a MySQL host pattern (`%` anywhere, `10.0.0.%`, an IP).', example: '%' });

export const DatabaseParams = z
  .object({
    id: Uuid,
    databaseId: z
      .string()
      .max(32)
      // The panel's ids are hashids (letters and digits); `-` and `_` pass, to be answered 404 like any unknown id.
      .regex(/^[A-Za-z0-9_-]+$/, 'A database id')
      .meta({ description: "The database's id (the panel's)." }),
  })
  .strict();

export const ServerDatabase = z
  .object({
    id: text(32).meta({ description: "The panel's id of the database." }),
    name: text(48).meta({ description: 'The database name as the host knows it (`s{n}_` + the name given).' }),
    username: text(100),
    host: z
      .object({ address: text(255).nullable(), port: int32(0, 65_535).nullable() })
      .meta({ description: 'Where to connect: the database host of the panel.' }),
    remote: text(191).meta({ description: 'Where connections may come from (`%`: anywhere).' }),
    maxConnections: Count.meta({ description: 'Simultaneous connections allowed (0: the host default).' }),
  })
  .meta({ id: 'ServerDatabase' });

export const ServerDatabaseList = z
  .object({ data: z.array(ServerDatabase).max(1000) })
  .meta({ id: 'ServerDatabaseList', description: 'Never with passwords: a password is shown once, at create or rotate.' });

export const CreateDatabase = z
  .object({
    name: DatabaseName,
    remote: DatabaseRemote.default('%'),
  })
  .strict()
  .meta({ id: 'CreateDatabase' });

export const DatabaseWithPassword = ServerDatabase.extend({
  password: text(255).meta({ description: 'Shown this once: it is neither stored nor logged by the control plane.' }),
}).meta({ id: 'DatabaseWithPassword' });

export const DeletedDatabase = z.object({ id: text(32), deleted: z.literal(true) }).meta({ id: 'DeletedDatabase' });
