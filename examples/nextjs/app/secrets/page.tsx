import { read } from '@/lib/service';
import { DeleteSecretButton, NewSecretForm } from './secret-forms';

export default async function SecretsPage() {
  const { custom_secrets: secrets } = await read((trpc) => trpc.secrets.list.query({}));
  return (
    <section>
      <h1>Secrets</h1>
      <p className="hint">Every secret reaches the agent of each new conversation. Values are write-only.</p>
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Description</th>
            <th />
          </tr>
        </thead>
        <tbody id="secrets">
          {secrets.length === 0 && (
            <tr>
              <td colSpan={3}>No secrets yet.</td>
            </tr>
          )}
          {secrets.map((secret) => (
            <tr key={secret.name}>
              <td>{secret.name}</td>
              <td>{secret.description}</td>
              <td>
                <DeleteSecretButton name={secret.name} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <NewSecretForm />
    </section>
  );
}
