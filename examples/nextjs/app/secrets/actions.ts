'use server';
import { revalidatePath } from 'next/cache';
import { failed, succeeded, type ActionResult } from '@/lib/action-result';
import { service } from '@/lib/service';

export async function createSecret(_previous: ActionResult, form: FormData): Promise<ActionResult> {
  const name = String(form.get('name') ?? '');
  try {
    await (
      await service()
    ).secrets.create.mutate({
      name,
      value: String(form.get('value') ?? ''),
      description: String(form.get('description') ?? '') || null,
    });
  } catch (error) {
    return failed(error);
  }
  revalidatePath('/secrets');
  return succeeded(`Secret ${name.trim()} stored.`);
}

export async function deleteSecret(name: string): Promise<ActionResult> {
  try {
    await (await service()).secrets.delete.mutate({ secret_id: name });
  } catch (error) {
    return failed(error);
  }
  revalidatePath('/secrets');
  return succeeded(`Secret ${name} deleted.`);
}
