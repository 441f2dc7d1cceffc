/**
 * Operator actions of `vigil users …` (CONTRACT §1), as data: the CLI builds them, and either
 * applies them to the store directly or sends them to a running service's `POST /_admin/users`,
 * whose route validates the JSON back into the same shape. One mapping to UserAdmin serves
 * both paths.
 */
import type { UserAdmin, UserView } from './service.js';

/** The operation names, as the admin route accepts them in `op`. */
export const ADMIN_OPS = ['create', 'list', 'show', 'set', 'api', 'rotate-token'] as const;

/** One operator action with its arguments. */
export type AdminAction =
  | {
      op: 'create';
      args: { email: string; plan?: string; webhookUrl?: string | null; apiEnabled?: boolean };
    }
  | { op: 'list'; args: Record<string, never> }
  | { op: 'show'; args: { email: string } }
  | { op: 'set'; args: { email: string; plan?: string; webhookUrl?: string | null } }
  | { op: 'api'; args: { email: string; enabled: boolean } }
  | { op: 'rotate-token'; args: { email: string } };

/**
 * Carry out `action` on `admin`.
 * @throws VigilError as the UserAdmin method does (VIGIL_ERR_USER_NOT_FOUND,
 *   VIGIL_ERR_EMAIL_TAKEN, VIGIL_ERR_VALIDATION)
 */
export function applyAdminAction(
  admin: UserAdmin,
  action: AdminAction,
): Promise<UserView | UserView[]> {
  switch (action.op) {
    case 'create':
      return admin.createUser(action.args);
    case 'list':
      return admin.listUsers();
    case 'show':
      return admin.showUser(action.args.email);
    case 'set':
      return admin.setUser(action.args.email, action.args);
    case 'api':
      return admin.setApiEnabled(action.args.email, action.args.enabled);
    case 'rotate-token':
      return admin.rotateToken(action.args.email);
  }
}
