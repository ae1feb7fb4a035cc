import AppGroups
import Foundation
import Synchronization

/// `groupctl present --as BUNDLE-ID PATH [--release-on-suspend] [--refuse TEXT] [--never-answer]`
struct PresentCommand: ParsableCommand {
  static let path = Argument.positional("PATH")
  static let releaseOnSuspend = Argument.flag(
    "--release-on-suspend", help: "Remove the presenter during a suspension, add it again on resume.")
  static let refusal = Argument.option(
    "--refuse", value: "TEXT", help: "Save and deletion callbacks pass an error with TEXT.")
  static let neverAnswer = Argument.flag(
    "--never-answer", help: "Callbacks never call their completion handlers.")

  static let configuration = CommandConfiguration(
    commandName: "present",
    abstract: "Present a file or folder as an app, and print each coordination callback.",
    arguments: [path, releaseOnSuspend, refusal, neverAnswer],
    usage: "present --as BUNDLE-ID PATH [--release-on-suspend] [--refuse TEXT] [--never-answer]",
    discussion: """
      Registers a file presenter (NSFilePresenter) for PATH, a file or folder in a \
      container the app may use, as the app --as names, and prints one line on standard \
      output per callback, as it happens, until interrupted (SIGINT or SIGTERM; exit \
      status 0):

        save                          savePresentedItemChanges
        relinquish-to-reader          another process is about to read PATH
        relinquish-to-writer          another process is about to write PATH
        reacquire                     the reader or writer is done
        accommodate-deletion          PATH is about to be deleted
        did-change                    PATH was written
        did-move NEW-PATH             PATH moved; the presenter follows it
        accommodate-subitem-deletion PATH
                                      an item in the presented folder is deleted
        subitem-did-appear PATH       an item appeared in the presented folder
        subitem-did-change PATH       an item in the presented folder was written
        subitem-did-move OLD NEW      an item in the presented folder moved

      A path with a control character or a backslash in it is printed in quotes, those \
      escaped (\\n, \\t, \\\\, \\U001B), so that every line is one callback.

      Standard error says "presenting PATH as BUNDLE-ID (Ctrl-C to stop)" once the \
      presenter is registered. A change made without coordination is heard too \
      (did-change, accommodate-deletion).

      With --release-on-suspend the presenter behaves as Apple asks of an app going to \
      the background: when 'groupctl suspend' is about to suspend the process, it \
      removes itself ("removed the presenter for the suspension"), and adds itself \
      again on resume. Without it, a suspended presenter cannot answer, and a \
      coordinated access of PATH fails after its bound, naming this app.

      --refuse TEXT makes save and the deletion callbacks pass an error with TEXT (the \
      coordinated access fails with it); --never-answer makes every callback keep its \
      completion handler (the access fails after its bound): for trying a \
      coordinator's handling of such presenters.
      """
  )

  let arguments: Arguments

  func validate() throws {
    guard globals.identity != nil else {
      throw ValidationError("present needs --as BUNDLE-ID: the app that presents PATH")
    }
    if arguments[Self.refusal] != nil, arguments[Self.neverAnswer] {
      throw ValidationError("--refuse and --never-answer are two behaviours; give one")
    }
  }

  func run() throws {
    guard let identity = try globals.appIdentity() else { return }
    let root = globals.containerRoot
    NSFileCoordinator.appIdentity = identity
    let stop = DispatchSemaphore(value: 0)
    let sources = Processes.interceptInterruptAndTerminate(on: .global()) { stop.signal() }
    let (refusal, neverAnswer) = (arguments[Self.refusal], arguments[Self.neverAnswer])
    let url = URL(fileURLWithPath: arguments[Self.path]).standardizedFileURL
    let output = LineWriter()
    let behaviour: PrintingPresenter.Behaviour =
      neverAnswer ? .neverAnswer : refusal.map { .refuse($0) } ?? .answer
    let presenter = PrintingPresenter(url: url, output: output, behaviour: behaviour)
    do {
      try NSFileCoordinator.addFilePresenter(presenter, throwing: ())
    } catch {
      throw CommandFailure("cannot present \(url.path) as \(identity.bundleIdentifier): \(error.message)")
    }
    var observations: [Observation] = []
    if arguments[Self.releaseOnSuspend] {
      AppLifecycle.start(identity: identity, root: root)
      // What the item looked like when the presenter went away: a change made meanwhile is
      // told on resume, as Apple asks of a presenter added again.
      let before = ModificationDate()
      observations.append(
        AppLifecycle.onSuspend { _ in
          NSFileCoordinator.removeFilePresenter(presenter)
          before.value.withLock { $0 = presenter.modificationDate }
          output.write("removed the presenter for the suspension")
        })
      observations.append(
        AppLifecycle.onResume {
          NSFileCoordinator.addFilePresenter(presenter)
          output.write("presenting again after the resume")
          if before.value.withLock({ $0 }) != presenter.modificationDate {
            presenter.presentedItemOperationQueue.addOperation { presenter.presentedItemDidChange() }
          }
        })
    }
    printError("presenting \(url.path) as \(identity.bundleIdentifier) (Ctrl-C to stop)")
    stop.wait()
    NSFileCoordinator.removeFilePresenter(presenter)
    for observation in observations { observation.cancel() }
    for source in sources { source.cancel() }
  }
}

/// A presenter that prints a line per callback.
final class PrintingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
  enum Behaviour {
    case answer
    case refuse(String)
    case neverAnswer
  }

  private let url: Mutex<URL>
  private let output: LineWriter
  private let behaviour: Behaviour
  let presentedItemOperationQueue: OperationQueue

  init(url: URL, output: LineWriter, behaviour: Behaviour) {
    self.url = Mutex(url)
    self.output = output
    self.behaviour = behaviour
    presentedItemOperationQueue = OperationQueue()
    presentedItemOperationQueue.maxConcurrentOperationCount = 1
  }

  var presentedItemURL: URL? { url.withLock { $0 } }

  /// The item's modification date now (nil when it is not there).
  var modificationDate: Date? {
    guard let path = presentedItemURL?.path else { return nil }
    return (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
  }

  private func answer(_ line: String, _ completion: @escaping @Sendable ((any Error)?) -> Void) {
    output.write(line)
    switch behaviour {
    case .answer: completion(nil)
    case .refuse(let text):
      completion(NSError(domain: NSCocoaErrorDomain, code: CocoaError.fileWriteNoPermission.rawValue,
                         userInfo: [NSLocalizedDescriptionKey: text]))
    case .neverAnswer: break
    }
  }

  func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
    output.write("relinquish-to-reader")
    if case .neverAnswer = behaviour { return }
    reader { [output] in output.write("reacquire") }
  }

  func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
    output.write("relinquish-to-writer")
    if case .neverAnswer = behaviour { return }
    writer { [output] in output.write("reacquire") }
  }

  func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
    answer("save", completionHandler)
  }

  func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
    answer("accommodate-deletion", completionHandler)
  }

  func presentedItemDidMove(to newURL: URL) {
    url.withLock { $0 = newURL }
    output.write("did-move \(Self.shown(newURL))")
  }

  func presentedItemDidChange() { output.write("did-change") }

  /// A path as a callback's line shows it (``PrintedText/shown(_:)``): as it is, or, when it
  /// holds a control character (a newline would start a line of its own, a callback that
  /// never happened) or a backslash, in quotes with those escaped, as `read` prints such a
  /// string.
  static func shown(_ url: URL) -> String { PrintedText.shown(url.path) }

  func accommodatePresentedSubitemDeletion(
    at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void
  ) {
    answer("accommodate-subitem-deletion \(Self.shown(url))", completionHandler)
  }

  func presentedSubitemDidAppear(at url: URL) {
    output.write("subitem-did-appear \(Self.shown(url))")
  }

  func presentedSubitemDidChange(at url: URL) {
    output.write("subitem-did-change \(Self.shown(url))")
  }

  func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
    output.write("subitem-did-move \(Self.shown(oldURL)) \(Self.shown(newURL))")
  }
}

/// A date shared by the suspension and resume callbacks.
final class ModificationDate: Sendable {
  let value = Mutex<Date?>(nil)
}
