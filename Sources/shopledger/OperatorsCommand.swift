import ArgumentParser
import Console
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `shopledger operators`: the people who sign in to the console (`serve --console-port`,
/// docs/console.md), each with one role. Passwords are stored only as scrypt hashes.
struct OperatorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators",
        abstract: "Add, list, disable operators of the console, or reset an operator's password.",
        subcommands: [
            OperatorsAddCommand.self, OperatorsListCommand.self, OperatorsDisableCommand.self,
            OperatorsResetPasswordCommand.self,
        ])
}

/// Where a new password comes from: a private file, standard input, or a prompt (asked twice).
struct PasswordOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Read the password from this file (private to its owner, as ssh wants a key).", valueName: "file"))
    var passwordFile: String?

    @Flag(help: "Read the password from standard input's first line (for scripts).")
    var passwordStdin = false

    func validate() throws {
        guard !(passwordFile != nil && passwordStdin) else {
            throw ValidationError("Give --password-file or --password-stdin, not both.")
        }
    }

    func password() throws -> String {
        let password: String
        if let passwordFile {
            password = try SecretFile.read(
                passwordFile, what: "the password", maxBytes: PasswordHash.maximumPasswordBytes)
        } else if passwordStdin {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("--password-stdin: standard input gave no line.")
            }
            password = line
        } else {
            guard isatty(STDIN_FILENO) != 0 else {
                throw ValidationError("No terminal to ask the password on: use --password-file or --password-stdin.")
            }
            let first = Self.ask("New password: ")
            guard first == Self.ask("The same again: ") else { throw ValidationError("The two passwords differ.") }
            password = first
        }
        do {
            try PasswordHash.checkStrength(password)
        } catch {
            throw ValidationError(error.description)
        }
        return password
    }

    private static func ask(_ prompt: String) -> String {
        guard let answer = getpass(prompt) else { return "" }
        return String(cString: answer)
    }
}

struct OperatorsAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add an operator with a role: support, finance or admin.",
        discussion: """
            support: customers (look up, grant and revoke with a reason, ask Apple). finance: that and the \
            money pages. admin: everything, with the shop's catalog, webhooks, sync and reconciliation. \
            Exit status: 0 added, 1 the name is taken (nothing changed).
            """)

    @Argument(help: "The name to sign in with: 1-64 of a-z, 0-9, '.', '_', '-'.")
    var name: String

    @Option(help: "support, finance or admin.")
    var role: String

    @OptionGroup var password: PasswordOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard Operator.Role(rawValue: role) != nil else {
            throw ValidationError("--role must be support, finance or admin.")
        }
        do {
            try Operator.checkName(name)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let secret = try password.password()
        let role = Operator.Role(rawValue: role) ?? .support
        do {
            let added = try await database.withClient(schema: .requireCurrent) { client in
                try await OperatorStore(client: client).add(name: name, role: role, password: secret)
            }
            print("added operator \(added.name) (\(added.role.rawValue))")
        } catch let error as OperatorError where error.code == .nameTaken {
            FileHandle.standardError.write(Data("operators add: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct OperatorsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Every operator, by name.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let operators = try await database.withClient(schema: .requireCurrent) { client in
            try await OperatorStore(client: client).list()
        }
        let formatter = ISO8601DateFormatter()
        print("name\trole\tstate\tcreated\tpassword set")
        for account in operators {
            print(
                [
                    account.name, account.role.rawValue,
                    account.disabledAt.map { "disabled \(formatter.string(from: $0))" } ?? "active",
                    formatter.string(from: account.createdAt), formatter.string(from: account.passwordChangedAt),
                ].joined(separator: "\t"))
        }
    }
}

struct OperatorsDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Disable an operator: their sessions end at once and they cannot sign in (reset-password enables).")

    @Argument(help: "The operator's name.")
    var name: String

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        do {
            let account = try await database.withClient(schema: .requireCurrent) { client in
                try await OperatorStore(client: client).disable(name: name)
            }
            print("disabled operator \(account.name)")
        } catch let error as OperatorError {
            throw ValidationError(error.message)
        }
    }
}

struct OperatorsResetPasswordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-password",
        abstract: "Set an operator's password (enabling a disabled one); their sessions end.")

    @Argument(help: "The operator's name.")
    var name: String

    @OptionGroup var password: PasswordOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let secret = try password.password()
        do {
            let account = try await database.withClient(schema: .requireCurrent) { client in
                try await OperatorStore(client: client).resetPassword(name: name, password: secret)
            }
            print("new password set for operator \(account.name)")
        } catch let error as OperatorError {
            throw ValidationError(error.message)
        }
    }
}
