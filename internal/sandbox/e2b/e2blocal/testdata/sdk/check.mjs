// Drives the official E2B JS SDK against the control plane named by
// E2B_API_URL / E2B_SANDBOX_URL (set by the Go test that runs it): create,
// list, a streaming command, a file written and read back, a timeout set,
// kill. It prints one JSON object of what it saw; the Go test judges it.
import { Sandbox } from 'e2b'

const out = {}
const sbx = await Sandbox.create(process.env.SDK_TEMPLATE, {
  timeoutMs: 60_000,
  metadata: { suite: 'swerve-sdk-check' },
})
out.sandboxId = sbx.sandboxId

const page = Sandbox.list({ query: { metadata: { suite: 'swerve-sdk-check' } } })
out.listed = (await page.nextItems()).map((s) => s.sandboxId)

let chunks = []
const command = () => {
  chunks = []
  return sbx.commands.run('echo one; sleep 0.3; echo two; echo err >&2; exit 3', {
    onStdout: (d) => chunks.push(['stdout', d]),
    onStderr: (d) => chunks.push(['stderr', d]),
  }).catch((e) => e) // a non-zero exit is thrown as CommandExitError
}
let run = await command()
if (run instanceof Error && run.exitCode === undefined) {
  // A stream cut below the protocol, "[unknown] terminated" (seen here
  // about once in ten runs; its cause is not known yet): said in the
  // output, and the command is run once more; the test judges the second.
  out.firstRunError = String(run)
  run = await command()
}
if (run instanceof Error && run.exitCode === undefined) out.runError = String(run)
out.exitCode = run.exitCode
out.stdout = run.stdout
out.stderr = run.stderr
out.chunks = chunks

await sbx.files.write('/tmp/sdk-check.txt', 'written by the E2B SDK\n')
out.readBack = await sbx.files.read('/tmp/sdk-check.txt')

await sbx.setTimeout(120_000)
const info = await sbx.getInfo()
out.endAfterStart = Date.parse(info.endAt) - Date.now()

await sbx.kill()
const after = Sandbox.list({ query: { metadata: { suite: 'swerve-sdk-check' } } })
out.listedAfterKill = (await after.nextItems()).map((s) => s.sandboxId)
console.log(JSON.stringify(out))
