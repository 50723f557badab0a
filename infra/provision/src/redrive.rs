//! `redrive`: the dead letters of the dispatch and webhook queues (`docs/operations.md`).
//!
//! ```text
//! redrive list   DLQ_URL            # message id, receive count, body
//! redrive move   DLQ_URL QUEUE_URL  # every message back to the queue (body and attributes kept)
//! redrive delete DLQ_URL MESSAGE_ID # one message, after reading it
//! ```
//!
//! AWS region, credentials and `AWS_ENDPOINT_URL` (an emulator) from the standard environment.

use clap::{Parser, Subcommand};

/// Command line of `redrive`.
#[derive(Debug, Parser)]
#[command(
    name = "redrive",
    about = "Lists, moves back or deletes dead-lettered messages (dispatch and webhook queues)"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
    /// At most this many messages.
    #[arg(long, default_value_t = 1_000)]
    max: usize,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prints each message: id, receive count, body.
    List {
        /// The dead-letter queue's URL.
        dlq_url: String,
    },
    /// Moves every message back to the queue.
    Move {
        /// The dead-letter queue's URL.
        dlq_url: String,
        /// The queue's URL.
        queue_url: String,
    },
    /// Deletes one message.
    Delete {
        /// The dead-letter queue's URL.
        dlq_url: String,
        /// The message's id (as `list` prints it).
        message_id: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let sdk = shared::store::dynamodb::env::sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    match args.command {
        Command::List { dlq_url } => {
            let found = provision::dead_letters::list(&sqs, &dlq_url, args.max).await?;
            for m in &found {
                println!("{}\treceived {}\t{}", m.message_id, m.receive_count, m.body);
            }
            println!("{} message(s)", found.len());
        }
        Command::Move { dlq_url, queue_url } => {
            let moved =
                provision::dead_letters::move_all(&sqs, &dlq_url, &queue_url, args.max).await?;
            println!("moved {moved} message(s) to {queue_url}");
        }
        Command::Delete {
            dlq_url,
            message_id,
        } => {
            if provision::dead_letters::delete(&sqs, &dlq_url, &message_id).await? {
                println!("deleted {message_id}");
            } else {
                anyhow::bail!("no message {message_id} in {dlq_url}");
            }
        }
    }
    Ok(())
}
