//! Rust ergonomics on `Tensor`: the arithmetic operators (`(&a + &b)?`, `(&a * 2.0)?`,
//! `(-&a)?`), which return `ops::binary::binary`'s `Result` (an error where shapes do not
//! broadcast) and take a `Result` operand, so `(&a * &b + &c)?` needs one `?` (a number after a
//! `Result` needs its own: `((&a * &a)? + 1.0)?`, since Rust's orphan rule forbids
//! `Result<Tensor> + f64`); `a.matmul(&b)?`; and `Display`, which prints the values as PyTorch's
//! `print(t)` does.
use super::binary::{binary, BinaryOp, Operand, Scalar};
use super::unary::{unary, UnaryOp};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::borrow::Borrow;
use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Sub};

impl Tensor {
    /// `torch.matmul`: dot, matrix-vector, matrix-matrix and broadcast batched products.
    ///
    /// ```
    /// use ember_core::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let eye = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
    /// assert_eq!(a.matmul(&eye)?.to_vec::<f64>()?, [1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), ember_core::Error>(())
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        super::matmul::matmul(self, other)
    }
}

fn tensors(op: BinaryOp, lhs: &Tensor, rhs: &Tensor) -> Result<Tensor> {
    binary(op, Operand::Tensor(lhs), Operand::Tensor(rhs))
}

/// A number operand, as a Python float in PyTorch: it does not widen a tensor's dtype.
fn number(x: f64) -> Operand<'static> {
    Operand::Scalar(Scalar::Float(x))
}

/// `impl Op<B> for &Tensor` and `Tensor` (`B` any `Borrow<Tensor>`), the `Result` operand
/// forms, and the number forms, all through `binary` and all returning its `Result`.
macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<B: Borrow<Tensor>> $trait<B> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: B) -> Result<Tensor> {
                tensors($op, self, rhs.borrow())
            }
        }
        impl<B: Borrow<Tensor>> $trait<B> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: B) -> Result<Tensor> {
                tensors($op, &self, rhs.borrow())
            }
        }
        /// The error of an earlier operator passes through, so `((&a * &b)? + &c)?` and
        /// `(&a * &b + &c)?` both chain.
        impl<B: Borrow<Tensor>> $trait<Tensor> for Result<B> {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                tensors($op, self?.borrow(), &rhs)
            }
        }
        impl<B: Borrow<Tensor>> $trait<&Tensor> for Result<B> {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                tensors($op, self?.borrow(), rhs)
            }
        }
        impl<B: Borrow<Tensor>> $trait<Result<B>> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Result<B>) -> Result<Tensor> {
                tensors($op, &self, rhs?.borrow())
            }
        }
        impl<B: Borrow<Tensor>> $trait<Result<B>> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Result<B>) -> Result<Tensor> {
                tensors($op, self, rhs?.borrow())
            }
        }
        impl $trait<f64> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: f64) -> Result<Tensor> {
                binary($op, Operand::Tensor(self), number(rhs))
            }
        }
        impl $trait<f64> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: f64) -> Result<Tensor> {
                binary($op, Operand::Tensor(&self), number(rhs))
            }
        }
        impl $trait<&Tensor> for f64 {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                binary($op, number(self), Operand::Tensor(rhs))
            }
        }
        impl $trait<Tensor> for f64 {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                binary($op, number(self), Operand::Tensor(&rhs))
            }
        }
    };
}

binary_operator!(Add, add, BinaryOp::Add);
binary_operator!(Sub, sub, BinaryOp::Sub);
binary_operator!(Mul, mul, BinaryOp::Mul);
binary_operator!(Div, div, BinaryOp::Div);

/// Errors on a bool tensor, as PyTorch refuses `-` there.
impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        unary(UnaryOp::Neg, self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        unary(UnaryOp::Neg, &self)
    }
}

/// Rows beyond which `Display` shows only the first and last `EDGE_ITEMS` of each dim, as
/// PyTorch's printing threshold of 1000 elements does.
const SUMMARY_THRESHOLD: usize = 1000;
const EDGE_ITEMS: usize = 3;

/// Prints the values as PyTorch's `print(t)`: `tensor([[1., 2.],\n        [3., 4.]])`, with
/// `dtype=` named when it is not the default for its kind, and `...` for the middle of big
/// dims.
///
/// ```
/// use ember_core::Tensor;
/// let t = Tensor::from_vec(vec![1.0f32, 2.5, -3.0, 4.0], &[2, 2])?;
/// assert_eq!(t.to_string(), "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]])");
/// let i = Tensor::from_vec(vec![1i32, 20], &[2])?;
/// assert_eq!(i.to_string(), "tensor([ 1, 20], dtype=int32)");
/// # Ok::<(), ember_core::Error>(())
/// ```
impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cells = match self.cells() {
            Ok(cells) => cells,
            Err(e) => return write!(f, "tensor(<{e}>)"),
        };
        let width = cells.iter().map(String::len).max().unwrap_or(0);
        let summarize = self.numel() > SUMMARY_THRESHOLD;
        let mut body = String::new();
        let mut next = cells.iter();
        write_nested(&mut body, self.shape(), summarize, width, "tensor(".len() + 1, &mut || next.next().cloned().unwrap_or_default());
        let default_dtype = matches!(self.dtype(), DType::F32 | DType::I64 | DType::Bool | DType::C64);
        match default_dtype {
            true => write!(f, "tensor({body})"),
            false => write!(f, "tensor({body}, dtype={})", self.dtype()),
        }
    }
}

impl Tensor {
    /// The printed form of each element shown (all of them, or the edges when summarised), in
    /// row-major order.
    fn cells(&self) -> Result<Vec<String>> {
        let shown = if self.numel() > SUMMARY_THRESHOLD { self.edges()? } else { self.clone() };
        match self.dtype() {
            DType::Bool => Ok(shown.to_vec::<bool>()?.iter().map(|&b| (if b { "True" } else { "False" }).to_string()).collect()),
            d if d.is_complex() => {
                let v = shown.to_dtype(DType::C128)?.to_vec::<crate::dtype::CDouble>()?;
                Ok(v.iter().map(|c| format!("{:.4}{:+.4}j", c.re, c.im)).collect())
            }
            d if d.is_float() => Ok(float_cells(&shown.to_dtype(DType::F64)?.to_vec::<f64>()?)),
            _ => Ok(shown.to_dtype(DType::I64)?.to_vec::<i64>()?.iter().map(i64::to_string).collect()),
        }
    }

    /// The first and last `EDGE_ITEMS` along every dim longer than twice that.
    fn edges(&self) -> Result<Tensor> {
        let mut t = self.clone();
        for d in 0..self.ndim() {
            let n = t.shape()[d];
            if n > 2 * EDGE_ITEMS {
                let head = t.narrow(d as i64, 0, EDGE_ITEMS as i64)?;
                let tail = t.narrow(d as i64, (n - EDGE_ITEMS) as i64, EDGE_ITEMS as i64)?;
                t = super::join::cat(&[head, tail], d as i64)?;
            }
        }
        Ok(t)
    }
}

/// Whole numbers as `3.`, others with four decimals, as PyTorch's default print options.
fn float_cells(values: &[f64]) -> Vec<String> {
    let whole = values.iter().all(|v| !v.is_finite() || v.fract() == 0.0);
    let cell = |v: &f64| match (v.is_nan(), v.is_infinite(), whole) {
        (true, _, _) => "nan".to_string(),
        (_, true, _) => (if *v > 0.0 { "inf" } else { "-inf" }).to_string(),
        (_, _, true) => format!("{v:.0}."),
        _ => format!("{v:.4}"),
    };
    values.iter().map(cell).collect()
}

/// Writes the nested brackets of `shape`, each element right-aligned to `width`; `indent` is
/// the column the outermost bracket's contents start at.
fn write_nested(out: &mut String, shape: &[usize], summarize: bool, width: usize, indent: usize, next: &mut dyn FnMut() -> String) {
    let Some((&n, inner)) = shape.split_first() else {
        out.push_str(&format!("{:>width$}", next()));
        return;
    };
    let shown = if summarize && n > 2 * EDGE_ITEMS { 2 * EDGE_ITEMS } else { n };
    let separator = if inner.is_empty() { ", ".to_string() } else { format!(",{}{}", "\n".repeat(inner.len()), " ".repeat(indent)) };
    out.push('[');
    for i in 0..shown {
        if i > 0 {
            out.push_str(&separator);
        }
        if shown < n && i == EDGE_ITEMS {
            out.push_str("...");
            out.push_str(&separator);
        }
        write_nested(out, inner, summarize, width, indent + 1, next);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn operators_broadcast_and_follow_pytorchs_dtypes() -> Result<()> {
        let a = t(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let b = t(vec![10.0, 20.0], &[2]);
        assert_eq!((&a + &b)?.to_vec::<f32>()?, [11.0, 22.0, 13.0, 24.0]);
        assert_eq!((&a - &b)?.to_vec::<f32>()?, [-9.0, -18.0, -7.0, -16.0]);
        assert_eq!((&a * 2.0)?.to_vec::<f32>()?, [2.0, 4.0, 6.0, 8.0]);
        assert_eq!((1.0 / &b)?.to_vec::<f32>()?, [0.1, 0.05]);
        assert_eq!((-a.clone())?.to_vec::<f32>()?, [-1.0, -2.0, -3.0, -4.0]);
        assert_eq!(a.clone().add(&b)?.to_vec::<f32>()?, (&a + &b)?.to_vec::<f32>()?);
        let i = Tensor::from_vec(vec![1i64, 2], &[2])?;
        assert_eq!((&i / &i)?.dtype(), DType::F32);
        assert_eq!(a.matmul(&b)?.to_vec::<f32>()?, [50.0, 110.0]);
        Ok(())
    }

    #[test]
    fn operators_chain_through_results() -> Result<()> {
        let a = t(vec![1.0, 2.0], &[2]);
        assert_eq!(((&a * &a)? + 1.0)?.to_vec::<f32>()?, [2.0, 5.0]);
        assert_eq!((&a * &a + &a)?.to_vec::<f32>()?, [2.0, 6.0]);
        assert_eq!((&a - (&a * 2.0))?.to_vec::<f32>()?, [-1.0, -2.0]);
        Ok(())
    }

    #[test]
    fn an_operator_returns_the_error_where_shapes_do_not_broadcast() {
        let (a, b) = (t(vec![0.0; 3], &[3]), t(vec![0.0; 2], &[2]));
        let err = (&a + &b).unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Runtime);
        assert!(err.message.contains("must match the size"), "{err}");
        assert!((&a + &b + &a).is_err(), "an error passes through a chain");
        let flags = Tensor::from_vec(vec![true], &[1]).unwrap();
        assert!((-&flags).is_err());
    }

    #[test]
    fn display_prints_values_as_pytorch() {
        assert_eq!(t(vec![1.0, 2.0], &[2]).to_string(), "tensor([1., 2.])");
        assert_eq!(Tensor::scalar(0.5f64).to_string(), "tensor(0.5000, dtype=float64)");
        assert_eq!(Tensor::from_vec(vec![true, false], &[2]).unwrap().to_string(), "tensor([ True, False])");
        assert_eq!(t(vec![0.0; 6], &[2, 1, 3]).to_string(), "tensor([[[0., 0., 0.]],\n\n        [[0., 0., 0.]]])");
        let big = Tensor::from_vec((0..2000i64).collect(), &[2000]).unwrap();
        assert_eq!(big.to_string(), "tensor([   0,    1,    2, ..., 1997, 1998, 1999])");
    }
}
