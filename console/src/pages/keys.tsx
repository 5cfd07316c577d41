// API keys of the app: create one (its secret shown once, with Copy), see the others, revoke.
import { useEffect, useState } from "preact/hooks";
import type { ApiKey } from "../../../src/gen/media/v1/api_key_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import { SecretOnce } from "../ui.js";
import type { PageProps } from "../workspace.js";

export function KeysPage({ workspace }: PageProps) {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [name, setName] = useState("");
  const [secret, setSecret] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();

  const refresh = async () => setKeys((await api.keys.list({ appId: workspace.appId, pagination: { limit: 100 } })).apiKeys);
  useEffect(() => {
    void refresh().catch((e: unknown) => setProblem(problemOf(e)));
  }, []);

  const create = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    try {
      const created = await api.keys.create({ appId: workspace.appId, name });
      setSecret(created.secret);
      setName("");
      await refresh();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  const revoke = async (key: ApiKey) => {
    if (!confirm(`Revoke the key "${key.name}"? Calls made with it fail at once.`)) return;
    try {
      await api.keys.revoke({ id: key.id });
      await refresh();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  return (
    <>
      <h1>API keys</h1>
      <form class="inline" onSubmit={create}>
        <label>
          Name
          <input
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            aria-invalid={problem?.fields.name ? "true" : undefined}
            aria-describedby="name-error"
          />
        </label>
        <button type="submit">Create key</button>
        {problem?.fields.name && (
          <span id="name-error" class="field-error">
            {problem.fields.name}
          </span>
        )}
      </form>
      {problem && !problem.fields.name && <p role="alert">{problem.message}</p>}
      {secret && <SecretOnce secret={secret} lead="Copy this key now: it is shown only once." />}
      {keys.length === 0 ? (
        <p class="empty">No keys yet: create one to call the API from your code.</p>
      ) : (
        <table>
          <caption class="visually-hidden">API keys of this app</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Scopes</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>
                    {k.keyPrefix}…{k.keyHint}
                  </code>
                </td>
                <td>{k.scopes.length ? k.scopes.join(", ") : "full access"}</td>
                <td>{k.isRevoked ? "revoked" : "active"}</td>
                <td>
                  {!k.isRevoked && (
                    <button type="button" class="danger" onClick={() => void revoke(k)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
