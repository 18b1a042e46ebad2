import Foundation
import SFTestSupport
import Testing

/// The generated ReadmeExamples.swift must be what README.md says today, so the examples the suite
/// compiles and runs are the ones a reader sees.
@Suite struct ReadmeFreshnessTests {
    @Test func generatedExamplesMatchTheReadme() throws {
        let script = TestSupport.packageRoot.appendingPathComponent("scripts/readme-examples.py").path
        let result = try TestSupport.run("python3", [script, "--check"])
        #expect(result.status == 0, "\(result.stderrText)")
    }
}
