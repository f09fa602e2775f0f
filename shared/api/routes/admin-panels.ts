import { define, PANEL } from '../route-def.ts';
import { IdParam } from '../schemas/common.ts';
import { CreateInstance, DeletedInstance, Instance, InstanceList, InstanceTestReport, UpdateInstance } from '../schemas/instances.ts';
import { ConfirmedOrphan, HeldOrphanList } from '../schemas/orphans.ts';

/**
 * The admin-panels group: the panels (instances) an operator registers, tests and removes, and the
 * panel servers the reconciler holds for confirmation. Admin routes, behind the edge's admin
 * authorizer like the admin group's (ADMIN_GROUPS); the only function that writes panel keys.
 */
export const adminPanelRoutes = define({
  adminListInstances: {
    method: 'GET',
    path: '/v1/admin/instances',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Registered panels (keys never shown)',
    response: InstanceList,
  },
  adminCreateInstance: {
    method: 'POST',
    path: '/v1/admin/instances',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Register a panel',
    description:
      "The keys go to the secret store (Secrets Manager in AWS), never to the table or a response. The panel's nodes are read with them: a panel registered already (the same normalised URL, or one of the same nodes under any URL) is refused with 409 `panel_already_registered`, naming that instance in `details.instanceId`.",
    body: CreateInstance,
    status: 201,
    response: Instance,
    idempotent: true,
    audit: 'instances.create',
    errors: ['panel_already_registered'],
  },
  adminUpdateInstance: {
    method: 'PATCH',
    path: '/v1/admin/instances/:id',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Change a panel: name, URL, keys, priority, enabled',
    params: IdParam,
    body: UpdateInstance,
    response: Instance,
    audit: 'instances.update',
    errors: ['panel_already_registered'],
  },
  adminDeleteInstance: {
    method: 'DELETE',
    path: '/v1/admin/instances/:id',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Remove a panel (refused with 409 while it hosts servers)',
    params: IdParam,
    response: DeletedInstance,
    audit: 'instances.delete',
    errors: ['conflict'],
  },
  adminTestInstance: {
    method: 'POST',
    path: '/v1/admin/instances/:id/test',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: "Connectivity report: nodes with region tags, the client key's service user",
    description: 'Failures of the panel are reported in `checks`, not as an error status. Caches the service user id on the instance.',
    params: IdParam,
    response: InstanceTestReport,
    audit: 'instances.test',
    errors: ['panel_error'],
  },
  adminListHeldOrphans: {
    method: 'GET',
    path: '/v1/admin/orphans',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Panel servers the reconciler holds for confirmation (no live record holds them)',
    description:
      'With the setting `holdOrphansForConfirmation` on (the default), the reconciler never deletes a panel server on its own: it lists it here.',
    response: HeldOrphanList,
  },
  adminConfirmOrphan: {
    method: 'POST',
    path: '/v1/admin/orphans/:id/confirm',
    group: 'admin-panels',
    tag: 'Admin',
    auth: 'bearer',
    scope: 'admin',
    admin: true,
    summary: 'Confirm the removal of a held orphan: deleted from its panel',
    description:
      'Checked again first: a live record that holds the server now (on any instance) answers 409 and drops the hold; a server the panel no longer has is not an error (`removed: false`).',
    params: IdParam,
    response: ConfirmedOrphan,
    audit: 'orphans.confirm',
    errors: ['conflict', 'operation_in_progress', ...PANEL],
  },
});
